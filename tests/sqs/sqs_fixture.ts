/**
 * Fixtures of the SQS tests: a real server on port 0 (on SQLite, or on PostgreSQL when one is
 * reachable) with an `@aws-sdk/client-sqs` client pointed at it, as one async disposable, and
 * the list of stores the core cases run on.
 *
 * @module
 */

import { SQSClient } from "@aws-sdk/client-sqs";
import type { ServeConfig } from "../../lib/config/serve_config.ts";
import { pgServerConfig, type PgTestDatabase, pgTestDatabase } from "../helpers/pg.ts";
import {
  startTestServer,
  type TestServer,
  type TestServerOptions,
} from "../helpers/test_server.ts";

/** The PostgreSQL database of this test run, or null when none is reachable. */
export const pg: PgTestDatabase | null = await pgTestDatabase();

/** A store the core cases run on. */
export interface StoreCase {
  /** `sqlite` or `postgres`. */
  name: string;
  /** Config fields that put the server on it. */
  config: () => Partial<ServeConfig>;
  /** True when it cannot run here. */
  ignore: boolean;
}

/** SQLite always; PostgreSQL when reachable. */
export const STORES: readonly StoreCase[] = [
  { name: "sqlite", config: () => ({}), ignore: false },
  { name: "postgres", config: () => pgServerConfig(pg!, pg!.schema()), ignore: pg === null },
];

/** A server and an SDK client pointed at it. */
export interface SqsTestServer extends AsyncDisposable {
  /** The server. */
  server: TestServer;
  /** The SDK client (dummy credentials unless given). */
  client: SQSClient;
}

/** Starts a server on the real clock (clients sign with the time) and an SDK client for it. */
export async function startSqsServer(
  options: TestServerOptions & {
    store?: StoreCase;
    credentials?: { accessKeyId: string; secretAccessKey: string };
  } = {},
): Promise<SqsTestServer> {
  const server = await startTestServer({
    realTime: true,
    ...options,
    config: { ...options.store?.config(), ...options.config },
  });
  const client = sdkClient(server.url, options.credentials);
  return {
    server,
    client,
    [Symbol.asyncDispose]: async () => {
      client.destroy();
      await server[Symbol.asyncDispose]();
    },
  };
}

/** An SDK client for `url`, with dummy credentials unless given; the SDK's retries are off. */
export function sdkClient(
  url: string,
  credentials = { accessKeyId: "tegami", secretAccessKey: "not-checked" },
): SQSClient {
  return new SQSClient({ endpoint: url, region: "us-east-1", credentials, maxAttempts: 1 });
}

/** The error an SDK call fails with: its name (the AWS code) and HTTP status. */
export async function sdkError(
  call: Promise<unknown>,
): Promise<{ name: string; status: number | undefined; message: string }> {
  try {
    await call;
  } catch (error) {
    const e = error as Error & { $metadata?: { httpStatusCode?: number } };
    return { name: e.name, status: e.$metadata?.httpStatusCode, message: e.message };
  }
  throw new Error("Expected the call to fail");
}
