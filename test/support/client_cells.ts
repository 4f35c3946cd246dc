/**
 * The client x feature matrix's cells (`test/server/clients_matrix_test.ts`): each feature called
 * as each client's docs show it (the `openai` package, the Vercel AI SDK over
 * `@ai-sdk/openai-compatible`, LangChain's `ChatOpenAI` and `OpenAI`), checked for the shape and
 * the content a real model's answer has. A cell returns a short note of what it saw and throws on
 * anything else; `null` marks a feature the client has no call for.
 */
import type { Cell } from "./client_shapes.ts";
import { OPENAI_CELLS } from "./client_cells_openai.ts";
import { AI_CELLS, LANGCHAIN_CELLS } from "./client_cells_others.ts";

export { type Cell, type Target } from "./client_shapes.ts";
export const CLIENT_NAMES = ["openai", "ai-sdk", "langchain"] as const;
export type ClientName = typeof CLIENT_NAMES[number];

/** Each client's cells, keyed by feature (the `openai` cells list every feature). */
export const CELLS: Record<ClientName, Record<string, Cell | null>> = {
  openai: OPENAI_CELLS,
  "ai-sdk": AI_CELLS,
  langchain: LANGCHAIN_CELLS,
};
