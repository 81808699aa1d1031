/**
 * The check `tegami consume --exec CMD` makes before it takes a job: that the program CMD starts
 * with can be run. Without it a mistyped command fails every job with exit 127 until each one is
 * dead, and the reason is only in the jobs' `last_error`.
 *
 * CMD is a shell command (`sh -c CMD`), so only its first word is checked, and only when that word
 * is plain (no quotes, expansions or redirections, which only the shell can read): a word with a
 * `/` must be an executable file; any other word must be something `sh` can run (`command -v`:
 * a program on `PATH`, a builtin such as `read`, a keyword such as `case`). Leading variable
 * assignments (`LANG=C sort`) are skipped.
 *
 * @module
 */

const PLAIN_WORD = /^[A-Za-z0-9_./+,:@%^~-]+$/;
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=\S*$/;

/** The first word of a shell command that names a program, or null when only the shell can say. */
export function commandWord(command: string): string | null {
  for (const word of command.trim().split(/\s+/)) {
    if (ASSIGNMENT.test(word)) continue;
    return PLAIN_WORD.test(word) ? word : null;
  }
  return null;
}

/**
 * Why `command` cannot run, or null when it can (or when its first word is not plain and only
 * running it will tell).
 */
export async function execProblem(command: string): Promise<string | null> {
  const word = commandWord(command);
  if (word === null) return null;
  if (word.includes("/")) {
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(word);
    } catch (error) {
      return error instanceof Deno.errors.NotFound
        ? `${word}: no such file`
        : `${word}: ${(error as Error).message}`;
    }
    if (!info.isFile) return `${word}: not a file`;
    // mode is null where the system has none (Windows): leave it to the run.
    if (info.mode !== null && (info.mode & 0o111) === 0) {
      return `${word}: not executable (chmod +x ${word})`;
    }
    return null;
  }
  const found = await new Deno.Command("sh", {
    args: ["-c", 'command -v -- "$1" >/dev/null', "sh", word],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).output();
  return found.code === 0 ? null : `${word}: command not found`;
}
