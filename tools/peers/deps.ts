/**
 * The peers' npm packages live in `tools/peers/node_modules`, installed from this folder's
 * lock file on first use (never by the project's root `npm install`). Optional dependencies are
 * omitted: node-llama-cpp lists CUDA builds (~540 MB) among them; the linux-x64 CPU and Vulkan
 * builds it needs here are direct dependencies instead.
 */
const here = new URL("./", import.meta.url).pathname;

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

let installing: Promise<void> | undefined;

/** Install the peers' packages unless they are there; throws with npm's output if it fails. */
export function ensurePeerDeps(): Promise<void> {
  return installing ??= (async () => {
    if (await exists(`${here}node_modules/.package-lock.json`)) return;
    console.error(
      "tools/peers: installing node-llama-cpp and onnx-proto (once)...",
    );
    const out = await new Deno.Command("npm", {
      // Not `npm ci`: it refuses this lock, which (written with --omit=optional) lacks the other
      // platforms' optional builds. `npm install` installs the locked versions all the same.
      args: [
        "install",
        "--prefix",
        here,
        "--omit=optional",
        "--no-audit",
        "--no-fund",
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) {
      const err = new TextDecoder().decode(out.stderr);
      throw new Error(`npm install in ${here} failed:\n${err}`);
    }
  })();
}

/** The folder the peers' packages are installed in. */
export const peersDir = here;
