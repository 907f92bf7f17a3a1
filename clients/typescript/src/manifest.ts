/**
 * The five tool definitions and the prompt section for a host's model, as the workers
 * declare them (`sessionq manifest`; `manifest.json` beside this package is that output,
 * kept equal to it by sessionq's tests): mount them as a dsh host mounts the upstream
 * session-query package.
 */
import { readFileSync } from "node:fs";

export interface ToolDefinition {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  [field: string]: unknown;
}

export interface Manifest {
  prompt_section: { name: string; order: number; text: string };
  tools: ToolDefinition[];
}

let loaded: Manifest | null = null;

export function manifest(): Manifest {
  loaded ??= JSON.parse(readFileSync(new URL("../../manifest.json", import.meta.url), "utf8")) as Manifest;
  return loaded;
}

export const toolDefinitions = (): ToolDefinition[] => manifest().tools;
export const toolNames = (): string[] => manifest().tools.map((t) => t.name);
