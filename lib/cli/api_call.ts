/**
 * One HTTP API call from a client command that the client library does not make (`tegami flow`,
 * `tegami job --wait`): JSON in and out, the token as a bearer, a refusal turned into an
 * {@linkcode ApiRefused} that carries the server's code and message.
 *
 * @module
 */

import type { ClientConfig } from "../config/client_config.ts";

/** The server refused a call (an error answer), or could not be reached. */
export class ApiRefused extends Error {}

/** Calls the API at `config.url`; answers the parsed JSON of a 2xx answer. */
export type ApiCall = <T>(method: string, path: string, body?: string) => Promise<T>;

/**
 * A caller for the server `config` names. A body is JSON text, sent as it is (so a file's
 * payloads reach the server unchanged).
 */
export function apiCaller(config: ClientConfig): ApiCall {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (config.token !== null) headers.authorization = `Bearer ${config.token}`;
  return async <T>(method: string, path: string, body?: string): Promise<T> => {
    let response: Response;
    try {
      response = await fetch(`${config.url}${path}`, { method, headers, body });
    } catch (error) {
      throw new ApiRefused(`Cannot reach ${config.url}: ${(error as Error).message}`);
    }
    const answer = await response.json().catch(() => null);
    if (!response.ok) {
      const error = answer?.error;
      throw new ApiRefused(
        error === undefined ? `HTTP ${response.status}` : `${error.code}: ${String(error.message)}`,
      );
    }
    return answer as T;
  };
}
