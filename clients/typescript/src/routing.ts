/**
 * Where records go: every record of a session is keyed by its workspace routing key —
 * the header's `cwd`, or `session:<id>` without one — so one partition holds them in
 * order. Requests and cancels are keyed by the caller's. Partitions are chosen by Kafka's
 * default (Java) murmur2 partitioner, as aiokafka and sessionq's own tools choose them
 * (`SESSIONQ_MISROUTED` otherwise, on partitioned nodes); kafkajs's DefaultPartitioner is
 * that one.
 */
import { Partitioners, type ProducerConfig } from "kafkajs";

export interface SessionHeader {
  version: number;
  id: string;
  createdAt: number;
  cwd?: string;
  parentSession?: string;
  [field: string]: unknown;
}

export function routingKey(header: { id: string; cwd?: string | null }): string {
  return typeof header.cwd === "string" ? header.cwd : `session:${header.id}`;
}

/** Every producer of this package: idempotent, in order, placed by the Java partitioner. */
export const PRODUCER_CONFIG: ProducerConfig = {
  idempotent: true,
  maxInFlightRequests: 1,
  createPartitioner: Partitioners.DefaultPartitioner,
};

const partitioner = Partitioners.DefaultPartitioner();

/** The partition of `key` in a topic of `count` partitions (all available). */
export function partitionOf(key: string, count: number): number {
  const partitionMetadata = Array.from({ length: count }, (_, i) => ({ partitionId: i, leader: 0, partitionErrorCode: 0, replicas: [0], isr: [0] }));
  return partitioner({ topic: "t", partitionMetadata, message: { key, value: null } });
}
