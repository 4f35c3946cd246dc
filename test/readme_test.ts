/**
 * The README and `docs/` as a newcomer follows them: every command in the README's shell blocks is
 * an npm script or a Deno task that exists, run with `--help`, and every flag it gives is one that
 * tool lists (a misspelt or removed flag fails here, not in a reader's terminal); the task names
 * `docs/` mentions exist; every relative link and anchor resolves; the README stays short, with a
 * table of contents that lists its sections. Running the README's examples against `serve` is
 * `test/server/readme_examples_test.ts`.
 */
import { deepStrictEqual, ok } from "node:assert/strict";
import { codeBlocks, headingAnchors, relativeLinks, shellCommands } from "./support/markdown.ts";

const ROOT = new URL("../", import.meta.url);
const read = (path: string) => Deno.readTextFileSync(new URL(path, ROOT));
const README = read("README.md");
const DOCS = [...Deno.readDirSync(new URL("docs/", ROOT))]
  .filter((e) => e.isFile && e.name.endsWith(".md"))
  .map((e) => `docs/${e.name}`)
  .sort();
const SCRIPTS: Record<string, string> = JSON.parse(read("package.json")).scripts;
const TASKS: Record<string, string> = JSON.parse(read("deno.json")).tasks;
const DENO = new URL("node_modules/.bin/deno", ROOT).pathname;

/** A README command as the test runs it: how to ask for its help, and what it passes. */
interface Resolved {
  /** The argv that prints the tool's usage. */
  help: string[];
  /** The words the README passes to the tool. */
  args: string[];
}

/** Splits a command line into words (single and double quotes; no expansion). */
function words(cmd: string): string[] {
  return [...cmd.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]!);
}

/** The Deno task an npm script runs, if it is one (`deno task NAME`). */
function scriptTask(script: string): string | undefined {
  return /^deno task (\S+)$/.exec(SCRIPTS[script] ?? "")?.[1];
}

/** How a README command resolves to a tool, or why it does not (a string). */
function resolve(cmd: string): Resolved | string | undefined {
  const w = words(cmd).filter((_x, i, all) => !all.slice(0, i + 1).every((y) => /^\w+=/.test(y)));
  const [head, sub, name] = w;
  const tail = (from: number) => w.slice(from).filter((x, i) => !(i === 0 && x === "--"));
  if (head === "curl") return undefined; // run against serve: readme_examples_test.ts
  if (head === "npx" && sub === "deno" && name === "task") {
    const task = w[3] ?? "";
    if (!(task in TASKS)) return `no Deno task ${task}`;
    return { help: [DENO, "task", task, "--help"], args: tail(4) };
  }
  if (head !== "npm") return `not an npm or npx deno command: ${cmd}`;
  if (sub === "install") return undefined;
  const script = sub === "run" ? name ?? "" : sub ?? "";
  const rest = tail(sub === "run" ? 3 : 2).filter((x) => x !== "&&" && x !== "npm");
  if (!(script in SCRIPTS)) return `no npm script ${script}`;
  const task = scriptTask(script);
  if (task) {
    if (!(task in TASKS)) return `npm script ${script} runs a missing Deno task ${task}`;
    return { help: [DENO, "task", task, "--help"], args: rest };
  }
  const node = /^node (\S+\.mjs)$/.exec(SCRIPTS[script]!)?.[1];
  if (!node) return `npm script ${script} is neither a Deno task nor a Node script`;
  return { help: ["node", new URL(node, ROOT).pathname, "--help"], args: rest };
}

/** The README's commands, one at a time (`a && b` as two). */
const COMMANDS = shellCommands(codeBlocks(README)).flatMap((c) => c.split(/\s*&&\s*/));

Deno.test("every command in the README exists and takes every flag it is given", async () => {
  ok(COMMANDS.length >= 8, `only ${COMMANDS.length} commands found`);
  const problems: string[] = [];
  for (const cmd of COMMANDS) {
    const r = resolve(cmd);
    if (r === undefined) continue;
    if (typeof r === "string") {
      problems.push(r);
      continue;
    }
    const out = await new Deno.Command(r.help[0]!, {
      args: r.help.slice(1),
      cwd: ROOT,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const help = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    if (!out.success) problems.push(`${cmd}: --help exited ${out.code}: ${help.slice(0, 300)}`);
    for (const flag of r.args.filter((a) => /^--?[a-z]/.test(a))) {
      const name = flag.split("=")[0]!;
      if (!new RegExp(`(^|[\\s,\\[])${name}\\b`).test(help)) {
        problems.push(`${cmd}: ${name} is not in its --help`);
      }
    }
  }
  deepStrictEqual(problems, []);
});

Deno.test("the suites the README names are suites", () => {
  const named = COMMANDS.flatMap((c) => /^npm test -- (.+)$/.exec(c)?.[1]?.split(/\s+/) ?? []);
  ok(named.length > 0);
  const suites = read("test/support/suites.ts");
  for (const s of named.filter((x) => !x.startsWith("-"))) {
    ok(suites.includes(`"${s}"`), `npm test -- ${s}: no such suite`);
  }
});

Deno.test("the tasks and scripts docs/ names exist", () => {
  const missing: string[] = [];
  for (const doc of ["README.md", ...DOCS]) {
    const text = read(doc);
    for (const m of text.matchAll(/npx deno task ([\w:-]+)/g)) {
      if (!(m[1]! in TASKS)) missing.push(`${doc}: npx deno task ${m[1]}`);
    }
    for (const m of text.matchAll(/npm run ([\w:-]+)/g)) {
      if (!(m[1]! in SCRIPTS)) missing.push(`${doc}: npm run ${m[1]}`);
    }
    for (const m of text.matchAll(/(?<![\w/.-])deno task ([\w:-]+)/g)) {
      if (!text.slice(Math.max(0, m.index! - 4), m.index!).endsWith("npx ")) {
        missing.push(
          `${doc}: bare "deno task ${m[1]}" (npm install puts deno in node_modules/.bin)`,
        );
      }
    }
  }
  deepStrictEqual(missing, []);
});

Deno.test("every relative link in the README and docs/ resolves, anchors too", () => {
  const broken: string[] = [];
  for (const doc of ["README.md", ...DOCS]) {
    const base = new URL(doc, ROOT);
    for (const { path, anchor } of relativeLinks(read(doc))) {
      const target = path ? new URL(path, base) : base;
      let text: string | undefined;
      try {
        const stat = Deno.statSync(target);
        if (stat.isFile && target.pathname.endsWith(".md")) text = Deno.readTextFileSync(target);
      } catch {
        broken.push(`${doc}: ${path} does not exist`);
        continue;
      }
      if (anchor && text !== undefined && !headingAnchors(text).has(anchor)) {
        broken.push(`${doc}: ${path || "(itself)"}#${anchor} names no heading`);
      }
    }
  }
  deepStrictEqual(broken, []);
});

Deno.test("the README is short and its contents list every section", () => {
  const lines = README.split("\n").length;
  ok(lines <= 300, `README.md has ${lines} lines`);
  const sections = [...README.matchAll(/^## (.+)$/gm)].map((m) => m[1]!)
    .filter((s) => s !== "Contents");
  const start = README.indexOf("## Contents");
  ok(start >= 0, "no ## Contents");
  const contents = README.slice(start, README.indexOf("\n## ", start + 1));
  for (const s of sections) ok(contents.includes(`[${s}]`), `Contents misses "${s}"`);
});
