/**
 * What the client x feature matrix's cells share (`test/support/client_cells.ts`): where a call
 * goes, the prompt, the schemas and tools, and the checks of a reply's shape.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";

/** Where a cell sends its calls: the server's `/v1` base and the served model's name. */
export interface Target {
  baseURL: string;
  model: string;
}
/** One cell: what it saw, or a throw. */
export type Cell = (t: Target) => Promise<string>;

export const PROMPT = "Tell me my fortune";
export const WEATHER = {
  type: "object",
  properties: { city: { type: "string", maxLength: 12 } },
  required: ["city"],
  additionalProperties: false,
} as const;
export const FORTUNE_SCHEMA = {
  type: "object",
  properties: {
    luck: { type: "integer", minimum: 1, maximum: 10 },
    mood: { enum: ["calm", "wild"] },
  },
  required: ["luck", "mood"],
  additionalProperties: false,
} as const;
export const TOOLS = [{
  type: "function" as const,
  function: { name: "get_weather", description: "The weather in a city", parameters: WEATHER },
}];

/** A value the fortune schema accepts, checked field by field. */
export function checkFortune(v: unknown): string {
  const o = v as { luck: number; mood: string };
  deepStrictEqual(Object.keys(o).sort(), ["luck", "mood"]);
  ok(Number.isInteger(o.luck) && o.luck >= 1 && o.luck <= 10, `luck ${o.luck}`);
  ok(o.mood === "calm" || o.mood === "wild", `mood ${o.mood}`);
  return JSON.stringify(o);
}

/** A `get_weather` call's arguments, checked. */
export function checkWeather(args: unknown): string {
  const a = (typeof args === "string" ? JSON.parse(args) : args) as { city: unknown };
  deepStrictEqual(Object.keys(a), ["city"]);
  equal(typeof a.city, "string");
  return `get_weather(${JSON.stringify(a.city)})`;
}
