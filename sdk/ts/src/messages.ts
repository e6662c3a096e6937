// The API's generated messages and services (protoc-gen-es), for typing requests and results.
export * from "./gen/coffer/v1/chain_pb.js";
export * from "./gen/coffer/v1/depositor_pb.js";
export * from "./gen/coffer/v1/events_pb.js";
export * from "./gen/coffer/v1/funds_pb.js";
export * from "./gen/coffer/v1/session_pb.js";
export * from "./gen/coffer/v1/types_pb.js";
export * from "./gen/coffer/v1/withdrawal_pb.js";
