/**
 * The check `tegami consume --exec` makes before taking jobs: the command's first word must be
 * something the shell can run.
 */

import assert from "node:assert/strict";
import { commandWord, execProblem } from "../../lib/cli/exec_check.ts";

Deno.test("commandWord() takes the first plain word, past variable assignments", () => {
  assert.equal(commandWord("./send-mail.sh --fast"), "./send-mail.sh");
  assert.equal(commandWord("  LANG=C TZ=UTC sort -u"), "sort");
  assert.equal(commandWord('read -r payload; case "$payload" in *) ;; esac'), "read");
  assert.equal(commandWord('"$HOME/bin/run" x'), null);
  assert.equal(commandWord("$(which python3) job.py"), null);
  assert.equal(commandWord("   "), null);
});

Deno.test("execProblem() accepts programs on PATH, builtins, keywords and executable files", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tegami-exec-check-" });
  try {
    const script = `${dir}/ok.sh`;
    await Deno.writeTextFile(script, "#!/bin/sh\ncat\n");
    await Deno.chmod(script, 0o755);
    for (const command of ["cat", "read -r x", "case x in *) ;; esac", `${script} a b`]) {
      assert.equal(await execProblem(command), null, command);
    }
    assert.equal(await execProblem('"quoted" things are left to the shell'), null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("execProblem() names a missing command, a missing file, a directory and a file without x", async () => {
  const dir = await Deno.makeTempDir({ prefix: "tegami-exec-check-" });
  try {
    const plain = `${dir}/plain.sh`;
    await Deno.writeTextFile(plain, "#!/bin/sh\n");
    await Deno.chmod(plain, 0o644);
    assert.equal(
      await execProblem("no-such-command-7f3a --x"),
      "no-such-command-7f3a: command not found",
    );
    assert.equal(await execProblem(`${dir}/send-mail.sh`), `${dir}/send-mail.sh: no such file`);
    assert.equal(await execProblem(dir), `${dir}: not a file`);
    assert.equal(await execProblem(plain), `${plain}: not executable (chmod +x ${plain})`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
