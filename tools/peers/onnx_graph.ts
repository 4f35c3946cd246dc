/**
 * A small builder for ONNX graphs, encoded with `onnx-proto`: protobufjs static code generated
 * from ONNX's own `onnx.proto`. A model file is a protobuf message with nested graphs, tensors
 * and attributes; using the generated message types (rather than writing protobuf wire bytes by
 * hand) means every field number and wire type comes from the schema itself.
 */
import onnxProto from "onnx-proto";

const { onnx } = onnxProto;
type INode = onnxProto.onnx.INodeProto;
type IAttr = onnxProto.onnx.IAttributeProto;
type IValueInfo = onnxProto.onnx.IValueInfoProto;
type ITensor = onnxProto.onnx.ITensorProto;

/** ONNX element types used here. */
export const Elem = { F32: 1, I64: 7, BOOL: 9, F16: 10 } as const;
export type Elem = (typeof Elem)[keyof typeof Elem];

/** A dimension: a number, or a symbolic name. */
export type Dim = number | string;

type AttrValue = number | number[] | { float: number };

function attribute(name: string, v: AttrValue): IAttr {
  const A = onnx.AttributeProto.AttributeType;
  if (Array.isArray(v)) return { name, type: A.INTS, ints: v };
  if (typeof v === "object") return { name, type: A.FLOAT, f: v.float };
  return { name, type: A.INT, i: v };
}

function valueInfo(
  name: string,
  elem: Elem,
  shape: readonly Dim[],
): IValueInfo {
  return {
    name,
    type: {
      tensorType: {
        elemType: elem,
        shape: {
          dim: shape.map((
            d,
          ) => (typeof d === "number" ? { dimValue: d } : { dimParam: d })),
        },
      },
    },
  };
}

export class GraphBuilder {
  readonly nodes: INode[] = [];
  readonly initializers: ITensor[] = [];
  readonly inputs: IValueInfo[] = [];
  readonly outputs: IValueInfo[] = [];
  #count = 0;
  #constants = new Map<string, string>();

  #name(prefix: string): string {
    return `${prefix}_${this.#count++}`;
  }

  input(name: string, elem: Elem, shape: readonly Dim[]): string {
    this.inputs.push(valueInfo(name, elem, shape));
    return name;
  }

  /** Mark `value` as the graph output `name` (through an Identity when the names differ). */
  output(value: string, name: string, elem: Elem, shape: readonly Dim[]): void {
    if (value !== name) {
      this.nodes.push({ opType: "Identity", input: [value], output: [name] });
    }
    this.outputs.push(valueInfo(name, elem, shape));
  }

  /** A weight: raw little-endian bytes of `elem` in row-major `dims`. */
  initializer(
    name: string,
    elem: Elem,
    dims: readonly number[],
    bytes: Uint8Array,
  ): string {
    this.initializers.push({
      name,
      dataType: elem,
      dims: [...dims],
      rawData: bytes,
    });
    return name;
  }

  /** A small constant tensor (deduplicated by value). */
  constant(
    elem: Elem,
    dims: readonly number[],
    values: readonly number[],
  ): string {
    const key = `${elem}|${dims}|${values}`;
    const known = this.#constants.get(key);
    if (known) return known;
    const bytes = elem === Elem.I64
      ? new Uint8Array(BigInt64Array.from(values.map(BigInt)).buffer)
      : elem === Elem.F32
      ? new Uint8Array(Float32Array.from(values).buffer)
      : undefined;
    if (bytes === undefined) {
      throw new Error(`constant of element type ${elem}`);
    }
    const name = this.initializer(this.#name("const"), elem, dims, bytes);
    this.#constants.set(key, name);
    return name;
  }

  /** A 1-D int64 constant. */
  ints(values: readonly number[]): string {
    return this.constant(Elem.I64, [values.length], values);
  }

  /** A scalar float32 constant. */
  scalar(value: number): string {
    return this.constant(Elem.F32, [], [value]);
  }

  /** Add a node; returns its outputs' names. */
  op(
    type: string,
    inputs: readonly string[],
    attrs: Record<string, AttrValue> = {},
    outputs = 1,
  ): string[] {
    const out = Array.from(
      { length: outputs },
      () => this.#name(type.toLowerCase()),
    );
    this.nodes.push({
      opType: type,
      name: this.#name(`n_${type}`),
      input: [...inputs],
      output: out,
      attribute: Object.entries(attrs).map(([k, v]) => attribute(k, v)),
    });
    return out;
  }

  /** Add a single-output node. */
  op1(
    type: string,
    inputs: readonly string[],
    attrs: Record<string, AttrValue> = {},
  ): string {
    return this.op(type, inputs, attrs, 1)[0]!;
  }

  /** The encoded model (opset 17, IR version 8). */
  encode(name: string): Uint8Array {
    const model = onnx.ModelProto.create({
      irVersion: 8,
      producerName: "kiln-bench",
      opsetImport: [{ domain: "", version: 17 }],
      graph: {
        name,
        node: this.nodes,
        initializer: this.initializers,
        input: this.inputs,
        output: this.outputs,
      },
    });
    return onnx.ModelProto.encode(model).finish();
  }
}
