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
