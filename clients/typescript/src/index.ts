/** The sessionq host client for TypeScript: publish sessions, call the five tools. */
export { ERROR_CODES, isErrorCode, SessionqToolError, type ErrorCode } from "./codes.js";
export { canonicalJson, envelopeDigest, unsignable } from "./jcs.js";
export { generateHostKey, keyring, writeHostKey, type HostKeyPair, type KeyringEntry } from "./keys.js";
export { CallerSigner, DEFAULT_TTL_S, MAX_LIFETIME_S } from "./tokens.js";
export { partitionOf, routingKey, type SessionHeader } from "./routing.js";
export { manifest, toolDefinitions, toolNames, type Manifest, type ToolDefinition } from "./manifest.js";
export { expandRow, LogRejectedError, logText, parseLog, type LogEvent, type ReadLog } from "./logs.js";
export { EVENTS_TOPIC, MAX_RECORD_BYTES, MAX_RECORD_EVENTS, Publisher, type PublishedLog, type PublishSummary } from "./publisher.js";
export {
  decodeReply, replyText, SessionqClient, REPLIES_TOPIC, REQUESTS_TOPIC,
  type CallOptions, type ClientOptions, type Reply, type ReplyCode, type ToolName,
} from "./client.js";
