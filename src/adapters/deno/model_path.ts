/**
 * The check Kiln's Deno tools make on a `--model` path before they load anything: a path that
 * does not exist (a misspelt folder, a GGUF file not there) ends the run with one line naming it
 * and exit code 2, rather than the loader's complaint about a file inside it ("no tokenizer.json").
 * A URL is not checked here (it is read over the network); a path that exists is the loader's to
 * judge.
 */

/** Whether `model` is read over HTTP rather than from the file system. */
export function isModelUrl(model: string): boolean {
  return /^https?:\/\//i.test(model);
}

/**
 * What is wrong with `path`, given as flag `flag`, in one line without the tool's name; undefined
 * when it exists, is a URL, or cannot be looked at (no read permission: the loader says so).
 * `cwd` names the folder a relative path was resolved in.
 */
export function missingModelPath(
  path: string,
  flag = "--model",
  cwd: () => string = () => Deno.cwd(),
): string | undefined {
  if (isModelUrl(path)) return undefined;
  try {
    Deno.statSync(path);
    return undefined;
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) return undefined;
  }
  const where = path.startsWith("/") ? "" : ` (relative to ${cwd()})`;
  return `${flag} ${path} does not exist${where}`;
}

/**
 * Exit with code 2 and the line `<tool>: <flag> <path> does not exist` when `path` does not
 * exist; return otherwise.
 */
export function requireModelPath(tool: string, path: string, flag = "--model"): void {
  const missing = missingModelPath(path, flag);
  if (missing === undefined) return;
  console.error(`${tool}: ${missing}`);
  Deno.exit(2);
}
