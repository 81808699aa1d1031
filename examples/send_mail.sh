#!/bin/sh
# A worker for `tegami consume email --exec examples/send_mail.sh` (see the README): the job's
# payload arrives on stdin, its id, attempt and queue in TEGAMI_JOB_ID, TEGAMI_ATTEMPT and
# TEGAMI_QUEUE. Exit 0 acks the job with stdout as its result (JSON, or else kept as text); any
# other exit nacks it with the tail of stderr as its error, to be retried after a backoff.
set -eu
payload=$(cat)
case "$payload" in
  *'"to"'*) ;;
  *) echo "no recipient in $payload" >&2; exit 1 ;;
esac
# A real worker would send the mail here; this one only says what it would send.
printf '{"sent":true,"job":%s,"attempt":%s}\n' "$TEGAMI_JOB_ID" "$TEGAMI_ATTEMPT"
