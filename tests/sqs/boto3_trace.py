"""Sends and receives AWSTraceHeader with Debian's boto3 (query protocol, XML answers) against
tegami at URL: MD5OfMessageSystemAttributes as AWS computes it (written out here), the header
given back by a receive, one bad header refused alone in a batch. Prints "ok" when every check
passed; any failure raises."""

import hashlib
import struct
import sys

import boto3
import botocore

XRAY = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"


def md5_of_system_attributes(attributes):
    """AWS's digest: per name, sorted: name, data type, transport byte 1, value, each text
    preceded by its UTF-8 length as a 4-byte big-endian integer."""
    digest = hashlib.md5()
    for name in sorted(attributes):
        for text in (name, "String"):
            data = text.encode("utf-8")
            digest.update(struct.pack(">I", len(data)) + data)
        digest.update(b"\x01")
        data = attributes[name].encode("utf-8")
        digest.update(struct.pack(">I", len(data)) + data)
    return digest.hexdigest()


def header(value, data_type="String"):
    return {"AWSTraceHeader": {"DataType": data_type, "StringValue": value}}


def main(url):
    c = boto3.client(
        "sqs",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="tegami",
        aws_secret_access_key="not-checked",
        config=botocore.config.Config(retries={"max_attempts": 1}),
    )
    assert c.meta.service_model.protocol == "query", c.meta.service_model.protocol
    q = c.create_queue(QueueName="traced-py")["QueueUrl"]
    sent = c.send_message(QueueUrl=q, MessageBody="one", MessageSystemAttributes=header(XRAY))
    assert sent["MD5OfMessageSystemAttributes"] == md5_of_system_attributes(
        {"AWSTraceHeader": XRAY}
    ), sent
    other = "Root=1-00000001-000000000000000000000002;Parent=0000000000000003;Sampled=0"
    batch = c.send_message_batch(
        QueueUrl=q,
        Entries=[
            {"Id": "a", "MessageBody": "two", "MessageSystemAttributes": header(other)},
            {"Id": "b", "MessageBody": "bad", "MessageSystemAttributes": header("Root=nope")},
            {"Id": "c", "MessageBody": "three"},
        ],
    )
    ok = {e["Id"]: e for e in batch["Successful"]}
    assert ok["a"]["MD5OfMessageSystemAttributes"] == md5_of_system_attributes(
        {"AWSTraceHeader": other}
    ), batch
    assert "MD5OfMessageSystemAttributes" not in ok["c"], batch
    assert [(f["Id"], f["Code"]) for f in batch["Failed"]] == [("b", "InvalidParameterValue")], batch
    got = c.receive_message(
        QueueUrl=q, MaxNumberOfMessages=10, AttributeNames=["AWSTraceHeader"]
    )["Messages"]
    seen = [(m["Body"], m.get("Attributes", {}).get("AWSTraceHeader")) for m in got]
    assert seen == [("one", XRAY), ("two", other), ("three", None)], seen
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1])
