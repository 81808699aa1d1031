"""Drives tegami's SQS API with Debian's boto3 (query protocol): `actions URL` runs every
action; `auth URL NAME TOKEN` checks signatures with --tokens. Prints "ok" when every check
passed; any failure raises."""

import datetime
import json
import sys
import time
import urllib.request

import boto3
import botocore
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


def client(url, key="tegami", secret="not-checked"):
    return boto3.client(
        "sqs",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id=key,
        aws_secret_access_key=secret,
        config=botocore.config.Config(retries={"max_attempts": 1}),
    )


def error_code(call):
    try:
        call()
    except botocore.exceptions.ClientError as error:
        return error.response["Error"]["Code"]
    raise AssertionError("expected an error")


def actions(url):
    c = client(url)
    assert c.meta.service_model.protocol == "query", c.meta.service_model.protocol
    q = c.create_queue(QueueName="py", Attributes={"VisibilityTimeout": "40"})["QueueUrl"]
    assert q.endswith("/000000000000/py"), q
    assert c.get_queue_url(QueueName="py")["QueueUrl"] == q
    assert c.list_queues(QueueNamePrefix="p")["QueueUrls"] == [q]
    attrs = c.get_queue_attributes(QueueUrl=q, AttributeNames=["All"])["Attributes"]
    assert attrs["VisibilityTimeout"] == "40", attrs
    c.set_queue_attributes(QueueUrl=q, Attributes={"RedrivePolicy": '{"maxReceiveCount":"4"}'})
    attrs = c.get_queue_attributes(QueueUrl=q, AttributeNames=["RedrivePolicy"])["Attributes"]
    assert attrs == {"RedrivePolicy": '{"maxReceiveCount":4}'}, attrs

    body = "a&<b>\r\n'c\" é 👋"
    sent = c.send_message(QueueUrl=q, MessageBody=body)  # boto3 checks MD5OfMessageBody
    batch = c.send_message_batch(
        QueueUrl=q,
        Entries=[
            {"Id": "1", "MessageBody": "one"},
            {"Id": "2", "MessageBody": "two", "DelaySeconds": 1000},
        ],
    )
    assert [e["Id"] for e in batch["Successful"]] == ["1"], batch
    assert [(e["Id"], e["Code"]) for e in batch["Failed"]] == [("2", "InvalidParameterValue")]
    got = c.receive_message(QueueUrl=q, MaxNumberOfMessages=10, AttributeNames=["All"])
    messages = got["Messages"]
    assert [m["Body"] for m in messages] == [body, "one"], messages
    assert messages[0]["MessageId"] == sent["MessageId"]
    assert messages[0]["Attributes"]["ApproximateReceiveCount"] == "1"
    assert "Messages" not in c.receive_message(QueueUrl=q)

    first, second = messages
    c.change_message_visibility(QueueUrl=q, ReceiptHandle=first["ReceiptHandle"], VisibilityTimeout=0)
    again = c.receive_message(QueueUrl=q)["Messages"][0]
    assert again["MessageId"] == first["MessageId"]
    c.delete_message(QueueUrl=q, ReceiptHandle=first["ReceiptHandle"])  # stale: deletes nothing
    assert error_code(lambda: c.change_message_visibility(
        QueueUrl=q, ReceiptHandle=first["ReceiptHandle"], VisibilityTimeout=5
    )) == "InvalidParameterValue"
    changed = c.change_message_visibility_batch(QueueUrl=q, Entries=[
        {"Id": "a", "ReceiptHandle": again["ReceiptHandle"], "VisibilityTimeout": 60},
        {"Id": "b", "ReceiptHandle": "nope", "VisibilityTimeout": 60},
    ])
    assert [e["Id"] for e in changed["Successful"]] == ["a"]
    assert [(e["Id"], e["Code"]) for e in changed["Failed"]] == [("b", "ReceiptHandleIsInvalid")]
    deleted = c.delete_message_batch(QueueUrl=q, Entries=[
        {"Id": "a", "ReceiptHandle": again["ReceiptHandle"]},
        {"Id": "b", "ReceiptHandle": "nope"},
    ])
    assert [e["Id"] for e in deleted["Successful"]] == ["a"]
    assert [(e["Id"], e["Code"]) for e in deleted["Failed"]] == [("b", "ReceiptHandleIsInvalid")]
    c.delete_message(QueueUrl=q, ReceiptHandle=second["ReceiptHandle"])
    assert error_code(lambda: c.change_message_visibility(
        QueueUrl=q, ReceiptHandle=second["ReceiptHandle"], VisibilityTimeout=5
    )) == "AWS.SimpleQueueService.MessageNotInflight"
    assert error_code(lambda: c.delete_message(QueueUrl=q, ReceiptHandle="x")) == \
        "ReceiptHandleIsInvalid"

    f = c.create_queue(QueueName="py.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    one = c.send_message(QueueUrl=f, MessageBody="f1", MessageGroupId="g")
    two = c.send_message(QueueUrl=f, MessageBody="f2", MessageGroupId="g")
    dup = c.send_message(QueueUrl=f, MessageBody="f1", MessageGroupId="g")
    assert dup["MessageId"] == one["MessageId"]
    assert int(one["SequenceNumber"]) < int(two["SequenceNumber"])
    got = c.receive_message(QueueUrl=f, MaxNumberOfMessages=10)["Messages"]
    assert [m["Body"] for m in got] == ["f1"], got
    assert error_code(lambda: c.send_message(QueueUrl=f, MessageBody="x")) == "MissingParameter"

    # Message attributes through the query protocol: boto3 checks MD5OfMessageAttributes of the
    # send and of the receive.
    a = c.create_queue(QueueName="py-attrs")["QueueUrl"]
    attributes = {
        "kind": {"DataType": "String", "StringValue": "invoice <&>"},
        "size": {"DataType": "Number", "StringValue": "12.5"},
        "blob": {"DataType": "Binary.raw", "BinaryValue": b"\x00\x01\xff"},
    }
    sent = c.send_message(QueueUrl=a, MessageBody="with", MessageAttributes=attributes)
    assert len(sent["MD5OfMessageAttributes"]) == 32, sent
    got = c.receive_message(QueueUrl=a, MessageAttributeNames=["All"])["Messages"][0]
    assert got["MessageAttributes"] == attributes, got
    assert got["MD5OfMessageAttributes"] == sent["MD5OfMessageAttributes"]

    c.send_message(QueueUrl=q, MessageBody="purged")
    c.purge_queue(QueueUrl=q)
    assert "Messages" not in c.receive_message(QueueUrl=q)
    c.delete_queue(QueueUrl=q)
    assert error_code(lambda: c.get_queue_url(QueueName="py")) == \
        "AWS.SimpleQueueService.NonExistentQueue"
    assert error_code(lambda: c.receive_message(QueueUrl=q, MaxNumberOfMessages=11)) == \
        "InvalidParameterValue"
    assert error_code(lambda: c.add_permission(
        QueueUrl=f, Label="l", AWSAccountIds=["111111111111"], Actions=["SendMessage"]
    )) == "AWS.SimpleQueueService.UnsupportedOperation"
    assert error_code(lambda: c.set_queue_attributes(
        QueueUrl=f, Attributes={"MessageRetentionPeriod": "59"}
    )) == "InvalidAttributeValue"
    c.set_queue_attributes(QueueUrl=f, Attributes={"MessageRetentionPeriod": "60"})
    attrs = c.get_queue_attributes(QueueUrl=f, AttributeNames=["MessageRetentionPeriod"])
    assert attrs["Attributes"] == {"MessageRetentionPeriod": "60"}, attrs


KEPT = {
    "DelaySeconds": "2",
    "ReceiveMessageWaitTimeSeconds": "1",
    "MaximumMessageSize": "1024",
    "Policy": json.dumps({"Version": "2012-10-17", "Statement": []}),
    "KmsMasterKeyId": "alias/aws/sqs",
    "KmsDataKeyReusePeriodSeconds": "300",
    "SqsManagedSseEnabled": "true",
    "RedriveAllowPolicy": '{"redrivePermission":"allowAll"}',
}


def kept(url, phase):
    """`write`: sets the kept attributes and tags and checks what they do; `read` (after a
    restart, or on another server): finds them as they were."""
    c = client(url)
    if phase == "write":
        q = c.create_queue(QueueName="kept-py", Attributes=KEPT, tags={"team": "py"})["QueueUrl"]
        c.tag_queue(QueueUrl=q, Tags={"env": "test", "gone": "x"})
        c.untag_queue(QueueUrl=q, TagKeys=["gone"])
        # A message sent without its own DelaySeconds takes the queue's.
        c.send_message(QueueUrl=q, MessageBody="later")
        attrs = c.get_queue_attributes(QueueUrl=q, AttributeNames=["All"])["Attributes"]
        assert attrs["ApproximateNumberOfMessagesDelayed"] == "1", attrs
        # A receive without WaitTimeSeconds waits the queue's second.
        started = time.monotonic()
        assert "Messages" not in c.receive_message(QueueUrl=q)
        assert time.monotonic() - started >= 0.9
        assert error_code(lambda: c.send_message(QueueUrl=q, MessageBody="x" * 1025)) == \
            "InvalidParameterValue"
        assert error_code(lambda: c.set_queue_attributes(
            QueueUrl=q, Attributes={"DelaySeconds": "901"}
        )) == "InvalidAttributeValue"
        many = {f"k{i}": "v" for i in range(49)}
        assert error_code(lambda: c.tag_queue(QueueUrl=q, Tags=many)) == "InvalidParameterValue"
    q = c.get_queue_url(QueueName="kept-py")["QueueUrl"]
    attrs = c.get_queue_attributes(QueueUrl=q, AttributeNames=["All"])["Attributes"]
    for name, value in KEPT.items():
        assert attrs[name] == value, (name, attrs)
    assert c.list_queue_tags(QueueUrl=q)["Tags"] == {"team": "py", "env": "test"}


def auth(url, name, token):
    good = client(url, name, token)
    q = good.create_queue(QueueName="signed")["QueueUrl"]
    good.send_message(QueueUrl=q, MessageBody="x")
    assert error_code(lambda: client(url, name, token + "x").list_queues()) == \
        "SignatureDoesNotMatch"
    assert error_code(lambda: client(url, "nobody", token).list_queues()) == \
        "InvalidClientTokenId"

    # The presigned form: every parameter and the signature in the URL, an empty body.
    presigned = good.generate_presigned_url(
        "get_queue_url", Params={"QueueName": "signed"}, HttpMethod="POST"
    )
    with urllib.request.urlopen(urllib.request.Request(presigned, method="POST", data=b"")) as r:
        answer = r.read().decode()
        assert r.status == 200 and "/000000000000/signed</QueueUrl>" in answer, answer
    tampered = presigned.replace("QueueName=signed", "QueueName=signef")
    try:
        urllib.request.urlopen(urllib.request.Request(tampered, method="POST", data=b""))
        raise AssertionError("a tampered presigned URL was accepted")
    except urllib.error.HTTPError as error:
        assert error.code == 403 and b"SignatureDoesNotMatch" in error.read()

    # A request signed an hour ago is refused.
    request = AWSRequest(
        method="POST",
        url=url + "/",
        data="Action=ListQueues&Version=2012-11-05",
        headers={"Content-Type": "application/x-www-form-urlencoded; charset=utf-8"},
    )
    signer = SigV4Auth(Credentials(name, token), "sqs", "us-east-1")
    old = datetime.datetime.utcnow() - datetime.timedelta(hours=1)
    request.context["timestamp"] = old.strftime("%Y%m%dT%H%M%SZ")
    signer._modify_request_before_signing(request)
    string_to_sign = signer.string_to_sign(request, signer.canonical_request(request))
    signature = signer.signature(string_to_sign, request)
    signer._inject_signature_to_request(request, signature)
    prepared = request.prepare()
    try:
        urllib.request.urlopen(urllib.request.Request(
            prepared.url, data=prepared.body.encode() if isinstance(prepared.body, str) else prepared.body,
            headers=dict(prepared.headers), method="POST",
        ))
        raise AssertionError("a request signed an hour ago was accepted")
    except urllib.error.HTTPError as error:
        text = error.read()
        assert error.code == 403 and b"Signature expired" in text, text


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "actions":
        actions(sys.argv[2])
    elif mode == "auth":
        auth(sys.argv[2], sys.argv[3], sys.argv[4])
    elif mode == "kept":
        kept(sys.argv[2], sys.argv[3])
    print("ok")
