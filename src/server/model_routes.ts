/**
 * The model routes: `GET /v1/models` (the served model, none while it loads) and
 * `GET /v1/models/{id}` (the served model by name, which may hold `/`: `Qwen%2FQwen3-0.6B` and
 * `Qwen/Qwen3-0.6B` both name `Qwen/Qwen3-0.6B`), and the 404 a request gets for a model not
 * served here, in OpenAI's shape (`code: "model_not_found"`, which the `openai` client raises
 * as `NotFoundError`).
 */
import type { EngineConfig } from "../contract/types.ts";
import { HttpError, quote } from "./errors.ts";

/** The path of the model list; `/v1/models/{id}` is one model. */
export const MODELS = "/v1/models";

/** An OpenAI model object, as the list and `/v1/models/{id}` give it. */
export interface ModelObject {
  /** The served name. */
  id: string;
  /** Always `model`. */
  object: "model";
  /** Unix seconds of creation: 0, as Kiln does not know it. */
  created: number;
  /** Always `kiln`. */
  owned_by: string;
}

/** The name `config`'s model is served under. */
export const servedName = (config: EngineConfig): string =>
  config.served_model_name ?? config.model;

/** Whether a request's `model` names `config`'s model: its served name, or the model's own. */
export const serves = (config: EngineConfig, model: string): boolean =>
  model === servedName(config) || model === config.model;

const modelObject = (config: EngineConfig): ModelObject => ({
  id: servedName(config),
  object: "model",
  created: 0,
  owned_by: "kiln",
});

/** 404 for `model`, which is not served here (`config`: what is, if anything yet). */
export function modelNotFound(model: string, config: EngineConfig | undefined): HttpError {
  const served = config ? `; this server serves ${quote(servedName(config))}` : "";
  return new HttpError(
    404,
    `the model ${quote(model)} does not exist here${served}`,
    "invalid_request_error",
    "model",
    "model_not_found",
  );
}

/** The id of a `/v1/models/{id}` path, percent-decoded; undefined for any other path. */
export function modelId(pathname: string): string | undefined {
  if (!pathname.startsWith(`${MODELS}/`)) return undefined;
  const raw = pathname.slice(MODELS.length + 1);
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw; // a malformed escape names no model
  }
}

/** `GET /v1/models`: the served model, or an empty list while none is ready. */
export function modelList(config: EngineConfig | undefined): Response {
  return Response.json({ object: "list", data: config ? [modelObject(config)] : [] });
}

/** `GET /v1/models/{id}`: the served model when `id` names it (see `serves`), else 404. */
export function modelResponse(id: string, config: EngineConfig | undefined): Response {
  if (!config || !serves(config, id)) throw modelNotFound(id, config);
  return Response.json(modelObject(config));
}
