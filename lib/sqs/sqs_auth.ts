/**
 * Who an SQS request acts as. With `--tokens`, it must carry an AWS Signature Version 4 (header
 * or presigned query) whose access key id is a token's name and whose secret access key is the
 * token: the principal is that token's, with its scopes and queues. Without tokens the signature
 * is not checked, but a request must still have SigV4's shape, so an HTML form posted from
 * another site (which cannot set `Authorization`) never reaches the query protocol.
 *
 * @module
 */

import {
  checkSigV4Time,
  type SignedRequest,
  sigV4Claim,
  SigV4Error,
  verifySigV4,
} from "../auth/sigv4.ts";
import { OPEN_ACCESS, type Principal, type TokenSet } from "../auth/tokens.ts";
import { SqsError } from "./sqs_error.ts";

/** The principal an SQS request acts as, or an `SqsError` refusing it. */
export function sqsPrincipal(
  tokens: TokenSet | null,
  request: SignedRequest,
  now: number,
): Principal {
  let claim;
  try {
    claim = sigV4Claim(request.url, request.header);
  } catch (error) {
    throw refusal(error);
  }
  if (claim === null) {
    throw new SqsError(
      "MissingAuthenticationToken",
      "Request is missing Authentication Token: sign it with AWS Signature Version 4 " +
        "(any access key and secret when the server has no --tokens)",
    );
  }
  if (tokens === null) return OPEN_ACCESS;
  const entry = tokens.signingEntry(claim.accessKey);
  if (entry === null) {
    throw new SqsError(
      "InvalidClientTokenId",
      "The security token included in the request is invalid: no token has that name",
    );
  }
  if (entry.secret === null) {
    throw new SqsError(
      "InvalidClientTokenId",
      `The token "${entry.principal.name}" is kept only as a sha256 digest and cannot sign ` +
        "SQS requests: give it as token in the tokens file",
    );
  }
  try {
    checkSigV4Time(claim, now);
    verifySigV4(claim, request, entry.secret);
  } catch (error) {
    throw refusal(error);
  }
  return entry.principal;
}

function refusal(error: unknown): SqsError {
  if (!(error instanceof SigV4Error)) throw error;
  return new SqsError(
    error.problem === "malformed" ? "IncompleteSignature" : "SignatureDoesNotMatch",
    error.message,
  );
}
