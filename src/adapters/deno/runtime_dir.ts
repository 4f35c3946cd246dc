/**
 * `XDG_RUNTIME_DIR` for the process when it is unset. Requesting a WebGPU adapter makes Deno's
 * wgpu try its OpenGL ES backend, whose EGL looks for a Wayland display; libwayland then prints
 * `error: XDG_RUNTIME_DIR is invalid or not set in the environment.` (twice) when the variable is
 * unset or not an absolute path, on a headless machine as on a desktop. The variable is read when
 * the adapter is requested, in the main thread or a Worker alike, so Kiln's Deno entry points call
 * {@linkcode ensureRuntimeDir} first, before either: the process gets a private directory
 * (`<temp>/kiln-runtime-<uid>`, mode 700, owned by the user; nothing is written in it).
 */

/** Systems whose GPU stack reads `XDG_RUNTIME_DIR` (not Windows, not macOS). */
const XDG_SYSTEMS: readonly string[] = ["linux", "android", "freebsd", "netbsd", "solaris"];

/** Whether `path` is a directory of ours (not a link), made private (mode 700) if it was not. */
function isOwnDir(path: string, uid: number): boolean {
  try {
    const info = Deno.lstatSync(path);
    if (!info.isDirectory || info.uid !== uid) return false;
    if (((info.mode ?? 0) & 0o077) !== 0) Deno.chmodSync(path, 0o700);
    return true;
  } catch {
    return false;
  }
}

/** Whether `desc` is granted already (asking would prompt on a terminal). */
const granted = (desc: Deno.PermissionDescriptor) =>
  Deno.permissions.querySync(desc).state === "granted";

/**
 * Set `XDG_RUNTIME_DIR` to a private directory when it is unset or not an absolute path; return
 * the value in force. Without the permissions it needs (`--allow-env`, `--allow-sys=uid`,
 * `--allow-read` and `--allow-write` to the temp directory) it changes nothing, never prompts, and
 * returns undefined: the message is noise, not an error.
 */
export function ensureRuntimeDir(): string | undefined {
  try {
    if (!XDG_SYSTEMS.includes(Deno.build.os)) return undefined;
    for (const variable of ["XDG_RUNTIME_DIR", "TMPDIR"]) {
      if (!granted({ name: "env", variable })) return undefined;
    }
    const given = Deno.env.get("XDG_RUNTIME_DIR");
    if (given?.startsWith("/")) return given;
    if (!granted({ name: "sys", kind: "uid" })) return undefined;
    const uid = Deno.uid() ?? 0;
    const tmpdir = Deno.env.get("TMPDIR");
    const temp = tmpdir?.startsWith("/") ? tmpdir.replace(/\/+$/, "") : "/tmp";
    if (!granted({ name: "write", path: temp }) || !granted({ name: "read", path: temp })) {
      return undefined;
    }
    let dir = `${temp}/kiln-runtime-${uid}`;
    try {
      Deno.mkdirSync(dir, { mode: 0o700 });
    } catch (e) {
      if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
    }
    // Someone else's directory, or a link planted under that name: a fresh one of our own.
    if (!isOwnDir(dir, uid)) dir = Deno.makeTempDirSync({ prefix: "kiln-runtime-" });
    Deno.env.set("XDG_RUNTIME_DIR", dir);
    return dir;
  } catch {
    return undefined;
  }
}
