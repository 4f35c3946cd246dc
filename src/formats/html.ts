/**
 * An HTML page where a model file should be. A single-page-app server (Vite without
 * `appType: "mpa"`, `serve -s`, an nginx `try_files ... /index.html`) answers `index.html` with
 * 200 for every path it has no file for, so each optional file Kiln probes for
 * (`tokenizer_config.json`, `generation_config.json`, `model.safetensors.index.json`,
 * `onnx/model.onnx`, ...) seems to exist. No model file is HTML, so an HTML answer means the file
 * is absent: optional files are then treated as absent, and a required one is an
 * `InvalidArgument` that says what the server did and how to stop it.
 */
import { EngineError } from "../contract/errors.ts";

/** Whether a response's `Content-Type` is an HTML page. */
export function isHtmlType(headers: Headers): boolean {
  const type = (headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  return type === "text/html" || type === "application/xhtml+xml";
}

/**
 * Whether `bytes` begin like an HTML page: `<!doctype` or `<html` (any case) after a byte-order
 * mark and whitespace. JSON starts with `{`, safetensors with a length, GGUF with `GGUF` and ONNX
 * with a protobuf tag, so this never matches a model file.
 */
export function looksLikeHtml(bytes: Uint8Array): boolean {
  const start = new TextDecoder().decode(bytes.subarray(0, 256)).replace(/^[\ufeff\s]+/, "");
  return /^<(!doctype|html)/i.test(start);
}

/** Why an HTML page came back, and how to make the server answer 404 instead. */
export const HTML_HINT =
  'likely a single-page-app fallback for a missing file; let missing files be 404s (Vite: appType: "mpa")';

/** The message for an HTML page at `where` (a URL, or a path for a file on disk). */
export function htmlMessage(where: string): string {
  return /^https?:/i.test(where)
    ? `${where}: the server answered an HTML page, not the model file: ${HTML_HINT}`
    : `${where}: an HTML page, not a model file`;
}

/** The `InvalidArgument` for a required file that came back as an HTML page. */
export function htmlPage(where: string): EngineError {
  return EngineError.invalidArgument(htmlMessage(where));
}
