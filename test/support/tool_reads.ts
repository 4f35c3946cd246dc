/** Tool-call parser tests' shared read: pieces pushed in order through one parser. */
import type { ToolCallParser, ToolCallStep } from "../../src/openai/tool_calls.ts";

/** Push `pieces` in order, then finish (`cut`: the reply was cut off); all steps joined. */
export function readPieces(
  parser: ToolCallParser,
  pieces: readonly string[],
  cut = false,
): ToolCallStep {
  const all: ToolCallStep = { content: "", calls: [] };
  for (const step of [...pieces.map((p) => parser.push(p)), parser.finish(cut)]) {
    all.content += step.content;
    all.calls.push(...step.calls);
  }
  return all;
}

/**
 * The ways a stream may hand `reply` over: cut in two at every character (`cut at k`), then one
 * character at a time (`one at a time`); each with its label.
 */
export function pieceSplits(reply: string): [string, string[]][] {
  const chars = [...reply];
  const out: [string, string[]][] = [];
  for (let k = 0; k <= chars.length; k++) {
    out.push([`cut at ${k}`, [chars.slice(0, k).join(""), chars.slice(k).join("")]]);
  }
  out.push(["one at a time", chars]);
  return out;
}
