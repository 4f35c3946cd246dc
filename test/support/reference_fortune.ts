/** The fortune model's float64 reference (`ReferenceModel`), loaded once per test process. */
import { dirFiles } from "../../src/adapters/deno/file_source.ts";
import { openCheckpoint } from "../../src/model/checkpoint.ts";
import { ReferenceModel } from "../../src/reference/model.ts";
import { FORTUNE } from "./fortune_engine.ts";

let loaded: Promise<ReferenceModel> | undefined;

/** Fortune's float64 reference model. */
export function fortuneReference(): Promise<ReferenceModel> {
  return loaded ??= openCheckpoint(dirFiles(FORTUNE)).then((c) =>
    ReferenceModel.load(c.config, c.weights)
  );
}
