/**
 * GGUF metadata value types: the type numbers a GGUF file stores before each value, and a typed
 * value of each (what the writer writes and what RoPE and tokenizer metadata are built from).
 */
/** GGUF metadata value types (the numbers stored in the file). */
export const GgufValueType = {
  UINT8: 0,
  INT8: 1,
  UINT16: 2,
  INT16: 3,
  UINT32: 4,
  INT32: 5,
  FLOAT32: 6,
  BOOL: 7,
  STRING: 8,
  ARRAY: 9,
  UINT64: 10,
  INT64: 11,
  FLOAT64: 12,
} as const;
export type GgufValueType = (typeof GgufValueType)[keyof typeof GgufValueType];

type Scalar = Exclude<GgufValueType, 9>;
type ScalarValue<T extends Scalar> = T extends 7 ? boolean
  : T extends 8 ? string
  : T extends 10 | 11 ? bigint | number
  : number;

/** One typed metadata value; arrays name their element type (nested arrays allowed). */
export type GgufValue =
  | { [T in Scalar]: { type: T; value: ScalarValue<T> } }[Scalar]
  | { type: 9; itemType: Scalar; value: readonly (ScalarValue<Scalar>)[] }
  | { type: 9; itemType: 9; value: readonly GgufValue[] };

export type GgufMetadata =
  | ReadonlyMap<string, GgufValue>
  | Readonly<Record<string, GgufValue>>;
