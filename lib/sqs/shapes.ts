/**
 * The shapes of the SQS actions tegami answers, written from botocore's service model of SQS
 * (`botocore/data/sqs/2012-11-05/service-2.json`): each member's JSON name, its type, and its
 * name in the query protocol (`locationName`), where lists and maps are flattened
 * (`AttributeName.1`, `Attribute.1.Name`, `SendMessageBatchRequestEntry.1.Id`).
 *
 * Both protocols decode a request into the same plain object, keyed by JSON names
 * (`json_protocol.ts`, `query_protocol.ts`), and the XML encoder walks the output shapes.
 *
 * @module
 */

/** A value's shape. */
export type Shape =
  | { readonly t: "string" }
  | { readonly t: "int" }
  | { readonly t: "bool" }
  | { readonly t: "blob" }
  | { readonly t: "list"; readonly member: Shape; readonly memberName: string }
  | {
    readonly t: "map";
    readonly key: string;
    readonly value: string;
    readonly valueShape: Shape;
  }
  | { readonly t: "struct"; readonly members: Readonly<Record<string, Member>> };

/** A structure's member: its shape and its query/XML name when it differs from the JSON one. */
export interface Member {
  /** The member's shape. */
  readonly shape: Shape;
  /** The name in the query protocol and in XML (`locationName`); the JSON name otherwise. */
  readonly loc?: string;
}

const STRING: Shape = { t: "string" };
const INT: Shape = { t: "int" };
const BOOL: Shape = { t: "bool" };
const BLOB: Shape = { t: "blob" };

const m = (shape: Shape, loc?: string): Member => loc === undefined ? { shape } : { shape, loc };
const struct = (members: Record<string, Member>): Shape => ({ t: "struct", members });
const list = (member: Shape, memberName: string): Shape => ({ t: "list", member, memberName });
const map = (key: string, value: string, valueShape: Shape): Shape => ({
  t: "map",
  key,
  value,
  valueShape,
});

/** `QueueAttributeMap`: `Attribute.N.Name` / `Attribute.N.Value`. */
const ATTRIBUTES = m(map("Name", "Value", STRING), "Attribute");

/** `TagMap`: `Tag.N.Key` / `Tag.N.Value`. */
const TAGS = m(map("Key", "Value", STRING), "Tag");

/** `MessageAttributeValue` (and the system attributes' value, the same shape). */
const ATTRIBUTE_VALUE = struct({
  StringValue: m(STRING),
  BinaryValue: m(BLOB),
  StringListValues: m(list(STRING, "StringListValue"), "StringListValue"),
  BinaryListValues: m(list(BLOB, "BinaryListValue"), "BinaryListValue"),
  DataType: m(STRING),
});
const MESSAGE_ATTRIBUTES = m(map("Name", "Value", ATTRIBUTE_VALUE), "MessageAttribute");
const SYSTEM_ATTRIBUTES = m(map("Name", "Value", ATTRIBUTE_VALUE), "MessageSystemAttribute");

const SEND_FIELDS = {
  MessageBody: m(STRING),
  DelaySeconds: m(INT),
  MessageAttributes: MESSAGE_ATTRIBUTES,
  MessageSystemAttributes: SYSTEM_ATTRIBUTES,
  MessageDeduplicationId: m(STRING),
  MessageGroupId: m(STRING),
};

const BATCH_ERROR = struct({
  Id: m(STRING),
  SenderFault: m(BOOL),
  Code: m(STRING),
  Message: m(STRING),
});

/** The input shape of every action tegami answers, by action name. */
export const INPUTS: Readonly<Record<string, Shape>> = {
  CreateQueue: struct({
    QueueName: m(STRING),
    Attributes: ATTRIBUTES,
    tags: TAGS,
  }),
  GetQueueUrl: struct({ QueueName: m(STRING), QueueOwnerAWSAccountId: m(STRING) }),
  ListQueues: struct({ QueueNamePrefix: m(STRING), NextToken: m(STRING), MaxResults: m(INT) }),
  ListDeadLetterSourceQueues: struct({
    QueueUrl: m(STRING),
    NextToken: m(STRING),
    MaxResults: m(INT),
  }),
  StartMessageMoveTask: struct({
    SourceArn: m(STRING),
    DestinationArn: m(STRING),
    MaxNumberOfMessagesPerSecond: m(INT),
  }),
  ListMessageMoveTasks: struct({ SourceArn: m(STRING), MaxResults: m(INT) }),
  CancelMessageMoveTask: struct({ TaskHandle: m(STRING) }),
  DeleteQueue: struct({ QueueUrl: m(STRING) }),
  PurgeQueue: struct({ QueueUrl: m(STRING) }),
  TagQueue: struct({ QueueUrl: m(STRING), Tags: TAGS }),
  UntagQueue: struct({ QueueUrl: m(STRING), TagKeys: m(list(STRING, "TagKey")) }),
  ListQueueTags: struct({ QueueUrl: m(STRING) }),
  GetQueueAttributes: struct({
    QueueUrl: m(STRING),
    AttributeNames: m(list(STRING, "AttributeName")),
  }),
  SetQueueAttributes: struct({ QueueUrl: m(STRING), Attributes: ATTRIBUTES }),
  SendMessage: struct({ QueueUrl: m(STRING), ...SEND_FIELDS }),
  SendMessageBatch: struct({
    QueueUrl: m(STRING),
    Entries: m(list(struct({ Id: m(STRING), ...SEND_FIELDS }), "SendMessageBatchRequestEntry")),
  }),
  ReceiveMessage: struct({
    QueueUrl: m(STRING),
    AttributeNames: m(list(STRING, "AttributeName")),
    MessageSystemAttributeNames: m(list(STRING, "MessageSystemAttributeName")),
    MessageAttributeNames: m(list(STRING, "MessageAttributeName")),
    MaxNumberOfMessages: m(INT),
    VisibilityTimeout: m(INT),
    WaitTimeSeconds: m(INT),
    ReceiveRequestAttemptId: m(STRING),
  }),
  DeleteMessage: struct({ QueueUrl: m(STRING), ReceiptHandle: m(STRING) }),
  DeleteMessageBatch: struct({
    QueueUrl: m(STRING),
    Entries: m(
      list(struct({ Id: m(STRING), ReceiptHandle: m(STRING) }), "DeleteMessageBatchRequestEntry"),
    ),
  }),
  ChangeMessageVisibility: struct({
    QueueUrl: m(STRING),
    ReceiptHandle: m(STRING),
    VisibilityTimeout: m(INT),
  }),
  ChangeMessageVisibilityBatch: struct({
    QueueUrl: m(STRING),
    Entries: m(
      list(
        struct({ Id: m(STRING), ReceiptHandle: m(STRING), VisibilityTimeout: m(INT) }),
        "ChangeMessageVisibilityBatchRequestEntry",
      ),
    ),
  }),
};

const ID_ONLY = (name: string) => m(list(struct({ Id: m(STRING) }), name));
const FAILED = m(list(BATCH_ERROR, "BatchResultErrorEntry"));

/**
 * The output shape of every action, by action name; null for an action that answers nothing but
 * its request id. The XML encoder follows these; the JSON answer is the object itself.
 */
export const OUTPUTS: Readonly<Record<string, Shape | null>> = {
  CreateQueue: struct({ QueueUrl: m(STRING) }),
  GetQueueUrl: struct({ QueueUrl: m(STRING) }),
  ListQueues: struct({ QueueUrls: m(list(STRING, "QueueUrl")), NextToken: m(STRING) }),
  ListDeadLetterSourceQueues: struct({
    queueUrls: m(list(STRING, "QueueUrl")),
    NextToken: m(STRING),
  }),
  StartMessageMoveTask: struct({ TaskHandle: m(STRING) }),
  ListMessageMoveTasks: struct({
    Results: m(
      list(
        struct({
          TaskHandle: m(STRING),
          Status: m(STRING),
          SourceArn: m(STRING),
          DestinationArn: m(STRING),
          MaxNumberOfMessagesPerSecond: m(INT),
          ApproximateNumberOfMessagesMoved: m(INT),
          ApproximateNumberOfMessagesToMove: m(INT),
          FailureReason: m(STRING),
          StartedTimestamp: m(INT),
        }),
        "Results",
      ),
    ),
  }),
  CancelMessageMoveTask: struct({ ApproximateNumberOfMessagesMoved: m(INT) }),
  DeleteQueue: null,
  PurgeQueue: null,
  TagQueue: null,
  UntagQueue: null,
  ListQueueTags: struct({ Tags: TAGS }),
  GetQueueAttributes: struct({ Attributes: ATTRIBUTES }),
  SetQueueAttributes: null,
  SendMessage: struct({
    MD5OfMessageBody: m(STRING),
    MD5OfMessageAttributes: m(STRING),
    MD5OfMessageSystemAttributes: m(STRING),
    MessageId: m(STRING),
    SequenceNumber: m(STRING),
  }),
  SendMessageBatch: struct({
    Successful: m(
      list(
        struct({
          Id: m(STRING),
          MessageId: m(STRING),
          MD5OfMessageBody: m(STRING),
          MD5OfMessageAttributes: m(STRING),
          MD5OfMessageSystemAttributes: m(STRING),
          SequenceNumber: m(STRING),
        }),
        "SendMessageBatchResultEntry",
      ),
    ),
    Failed: FAILED,
  }),
  ReceiveMessage: struct({
    Messages: m(
      list(
        struct({
          MessageId: m(STRING),
          ReceiptHandle: m(STRING),
          MD5OfBody: m(STRING),
          Body: m(STRING),
          Attributes: ATTRIBUTES,
          MD5OfMessageAttributes: m(STRING),
          MessageAttributes: MESSAGE_ATTRIBUTES,
        }),
        "Message",
      ),
    ),
  }),
  DeleteMessage: null,
  DeleteMessageBatch: struct({
    Successful: ID_ONLY("DeleteMessageBatchResultEntry"),
    Failed: FAILED,
  }),
  ChangeMessageVisibility: null,
  ChangeMessageVisibilityBatch: struct({
    Successful: ID_ONLY("ChangeMessageVisibilityBatchResultEntry"),
    Failed: FAILED,
  }),
};

/** The actions tegami answers. */
export const ACTIONS: readonly string[] = Object.keys(INPUTS);

/** Whether tegami answers `action`. */
export function isAction(action: string): boolean {
  return Object.hasOwn(INPUTS, action);
}
