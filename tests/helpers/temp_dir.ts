/**
 * A temporary directory as an async disposable: `await using dir = await tempDir("tegami-x-")`
 * makes it, and leaving the scope removes it with everything in it, however the test ends.
 *
 * @module
 */

/** A temporary directory, removed on dispose. */
export interface TempDir extends AsyncDisposable {
  /** Its absolute path. */
  readonly path: string;
}

/** Makes a fresh temporary directory whose name starts with `prefix`. */
export async function tempDir(prefix = "tegami-test-"): Promise<TempDir> {
  const path = await Deno.makeTempDir({ prefix });
  return {
    path,
    [Symbol.asyncDispose]: async () => {
      await Deno.remove(path, { recursive: true }).catch((error) => {
        if (!(error instanceof Deno.errors.NotFound)) throw error;
      });
    },
  };
}
