/**
 * The grammar worker: XGrammar off the engine's thread (see `grammar_host.ts`). The engine's
 * thread starts it on its first guided request (`grammar_worker_module.ts`) and sends it one
 * request at a time; masks come back as transferred buffers. A call that runs past its budget is
 * stopped the only way a WASM call can be: the engine's thread terminates this worker.
 * @module
 */
import { GrammarHost } from "./grammar_host.ts";
import type { GrammarRequest } from "./grammar_protocol.ts";

/** The worker scope as this module uses it (Deno's and the DOM's libs differ). */
interface Scope {
  onmessage: ((e: MessageEvent<GrammarRequest>) => void) | null;
  postMessage(message: unknown, transfer: Transferable[]): void;
}

const scope = globalThis as unknown as Scope;
const host = new GrammarHost();
scope.onmessage = async (e) => {
  const { reply, transfer } = await host.handle(e.data);
  scope.postMessage(reply, transfer);
};
