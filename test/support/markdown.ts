/**
 * Reading the project's Markdown as a newcomer meets it: fenced code blocks by language, relative
 * links, and heading anchors as GitHub spells them. For the tests that hold the README and
 * `docs/` to what the repository has (`test/readme_test.ts`, `test/server/readme_examples_test.ts`).
 */

/** A fenced code block: its info string's first word (`sh`, `js`, ...) and its text. */
export interface CodeBlock {
  lang: string;
  text: string;
}

/** Every fenced code block of a Markdown text, in order. */
export function codeBlocks(markdown: string): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  const fence = /^```([^\n`]*)\n([\s\S]*?)^```\s*$/gm;
  for (const m of markdown.matchAll(fence)) {
    blocks.push({ lang: (m[1] ?? "").trim().split(/\s+/)[0] ?? "", text: m[2] ?? "" });
  }
  return blocks;
}

/**
 * The commands of shell blocks: one per logical line (a trailing `\` joins the next), comments
 * (`# ...` after the command) and blank lines dropped.
 */
export function shellCommands(blocks: readonly CodeBlock[]): string[] {
  const out: string[] = [];
  for (const b of blocks.filter((b) => b.lang === "sh" || b.lang === "bash")) {
    const joined = b.text.replace(/\\\n\s*/g, " ");
    for (const line of joined.split("\n")) {
      const cmd = stripComment(line).trim();
      if (cmd) out.push(cmd);
    }
  }
  return out;
}

/** A line without its `# comment` (a `#` outside quotes, after a space or at the start). */
function stripComment(line: string): string {
  let quote = "";
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === quote) quote = "";
    } else if (c === "'" || c === '"') quote = c;
    else if (c === "#" && (i === 0 || line[i - 1] === " ")) return line.slice(0, i);
  }
  return line;
}

/** A relative link of a Markdown text: the path (empty for `#anchor` alone) and the anchor. */
export interface Link {
  path: string;
  anchor: string | undefined;
}

/** Every link that is not a URL with a scheme, outside code blocks and code spans. */
export function relativeLinks(markdown: string): Link[] {
  const prose = markdown.replace(/^```[\s\S]*?^```\s*$/gm, "").replace(/`[^`\n]*`/g, "");
  const links: Link[] = [];
  for (const m of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = m[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    const [path = "", anchor] = target.split("#", 2);
    links.push({ path, anchor });
  }
  return links;
}

/** The anchors of a Markdown text's headings, as GitHub makes them (duplicates get `-1`, ...). */
export function headingAnchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  const prose = markdown.replace(/^```[\s\S]*?^```\s*$/gm, "");
  for (const m of prose.matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const slug = m[1]!.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}
