/**
 * The declared shape of a Kiln Deno tool's command line: each flag's type and range, the table
 * of flags, the values parsing yields, and the whole spec (`flags.ts` parses it, `flags_usage.ts`
 * prints its usage).
 */

/** What every flag that takes a value declares. */
export interface FlagBase {
  /** What the flag does, for the usage text. */
  help: string;
  /** The value's name in the usage text (default from the type: `N`, `X`, `a|b`, `A,B`...). */
  arg?: string;
  /** Absent is an error. */
  required?: boolean;
}

/** A flag that takes a value, `default` when absent. */
export interface Valued<T> extends FlagBase {
  /** The value when the flag is absent. */
  default?: T;
}

/** Numbers within `[min, max]` (either bound optional). */
export interface Ranged {
  /** The smallest value accepted. */
  min?: number;
  /** The largest value accepted. */
  max?: number;
}

/** Any non-empty text. */
export interface StringFlag extends Valued<string> {
  /** The flag's type. */
  type: "string";
}

/** A whole number written in decimal, within `[min, max]`. */
export interface IntegerFlag extends Valued<number>, Ranged {
  /** The flag's type. */
  type: "integer";
}

/** A finite decimal number within `[min, max]`. */
export interface NumberFlag extends Valued<number>, Ranged {
  /** The flag's type. */
  type: "number";
}

/** One of `choices`. */
export interface EnumFlag extends Valued<string> {
  /** The flag's type. */
  type: "enum";
  /** The values accepted. */
  choices: readonly string[];
}

/** Comma-separated non-empty items (each one of `choices`, when given). */
export interface ListFlag extends Valued<readonly string[]> {
  /** The flag's type. */
  type: "list";
  /** The items accepted; any non-empty text when absent. */
  choices?: readonly string[];
}

/** Comma-separated whole numbers, each within `[min, max]`. */
export interface IntegerListFlag extends Valued<readonly number[]>, Ranged {
  /** The flag's type. */
  type: "integers";
}

/** A switch: present or not, it takes no value. */
export interface BooleanFlag {
  /** The flag's type. */
  type: "boolean";
  /** What the flag does, for the usage text. */
  help: string;
}

/** One declared flag (or environment variable). */
export type Flag =
  | StringFlag
  | IntegerFlag
  | NumberFlag
  | EnumFlag
  | ListFlag
  | IntegerListFlag
  | BooleanFlag;

/** Flags by name (`"kv-blocks"` is `--kv-blocks`), or environment variables by name. */
export type FlagTable = Readonly<Record<string, Flag>>;

/** The parsed value of a flag of declaration `F`. */
export type FlagValue<F> = F extends { type: "boolean" } ? boolean
  : F extends { type: "integer" | "number" } ? number
  : F extends { type: "enum"; choices: readonly (infer C)[] } ? C
  : F extends { type: "list"; choices: readonly (infer C)[] } ? C[]
  : F extends { type: "list" } ? string[]
  : F extends { type: "integers" } ? number[]
  : string;

/** Whether a flag of declaration `F` always has a value (a switch, a default or required). */
export type Always<F> = F extends { type: "boolean" } ? true
  : F extends { default: unknown } ? true
  : F extends { required: true } ? true
  : false;

/** The values of a table: flags with a default, required ones and switches are always set. */
export type FlagValues<T extends FlagTable> = {
  -readonly [K in keyof T]: Always<T[K]> extends true ? FlagValue<T[K]>
    : FlagValue<T[K]> | undefined;
};

/** A command line: what it is called, its flags, positional arguments and environment. */
export interface CliSpec<T extends FlagTable, E extends FlagTable = Record<never, Flag>> {
  /** The name errors start with (`serve`). */
  name: string;
  /** How it is run (`deno task serve`). */
  command: string;
  /** What it does, a sentence or two for the usage text. */
  about: string;
  /** Its flags. */
  flags: T;
  /** Positional arguments (none when absent): their usage text and how many. */
  args?: { usage: string; min: number; max: number; help: string };
  /** Environment variables it reads, checked like flags (empty counts as unset). */
  env?: E;
}

/** What {@linkcode parseCli} returns for a command line that is not `--help`. */
export interface ParsedCli<T extends FlagTable, E extends FlagTable> {
  /** Values of the flags. */
  flags: FlagValues<T>;
  /** The positional arguments. */
  args: string[];
  /** Values of the environment variables. */
  env: FlagValues<E>;
}
