/**
 * Where a model store keeps its files: entries keyed by a string, each the bytes of one file
 * (written front to back, so the bytes present are a prefix of the file) and a JSON sidecar
 * saying what they are. Backends: `memory.ts` (tests), `opfs.ts` and `cache_storage.ts`
 * (browsers), `src/adapters/deno/dir_storage.ts` (a directory).
 */
import { sha256 } from "@noble/hashes/sha2.js";
import type { ByteSource } from "../formats/source.ts";

/** What an entry holds, kept beside its bytes. */
export interface EntryMeta {
  /** The file's URL. */
  url: string;
  /** The model it belongs to (the base URL the store's `files` was given). */
  base: string;
  /** The file's name in the model (`config.json`, or the URL of a GGUF file). */
  name: string;
  /** The file's size in bytes (0 for an absent file). */
  size: number;
  /** The server's validator (`ETag`, or `Last-Modified`) the bytes were fetched under. */
  validator?: string;
  /** The content's SHA-256 (64 lowercase hex digits), when the server gave one. */
  sha256?: string;
  /** Every byte is present and verified (size, and SHA-256 where known). */
  complete: boolean;
  /**
   * The XXH32 of each `bytes`-byte chunk of the content (the last may be shorter), 8 hex digits
   * each, joined: recorded as the bytes are stored, checked as they are read (`checked.ts`).
   * Absent in entries stored before Kiln recorded them.
   */
  chunks?: { bytes: number; xxh32: string };
  /**
   * The server has no such file (404), or answered an HTML page in its place: remembered so
   * that a reload asks nothing. `"html"` for the page.
   */
  absent?: "missing" | "html";
  /**
   * An absent file's mark was confirmed by a load that got as far as downloading the weights
   * (the model was whole without it): only then does a reload trust it and ask nothing.
   */
  confirmed?: boolean;
  /** When the entry last changed (ms since the epoch). */
  updated: number;
}

/**
 * Bytes per hashed chunk of a stored entry (`EntryMeta.chunks`): 4 MiB keeps the sidecar small
 * (8 hex digits a chunk: 4 KiB for a 2 GB file), puts about half of each 8 MiB upload read in
 * whole chunks (hashed where they land), and bounds what a read of a few bytes brings in whole
 * (one chunk) and what a check holds (two chunks).
 */
export const HASH_CHUNK_BYTES = 4 * 1024 * 1024;

/** Writes an entry's bytes in order, from where it was opened. */
export interface EntryWriter {
  /**
   * Append `bytes`. They are the caller's again once the returned promise settles (the downloader
   * reads the next piece into the same buffer): a writer that holds bytes until later copies them.
   */
  write(bytes: Uint8Array): Promise<void>;
  /** Store what was written (the bytes so far count towards `length` once this resolves). */
  close(): Promise<void>;
}

/** A backend of the model store. */
export interface EntryStorage {
  /** What the bytes live in, for messages (`opfs`, `cache-storage`, `memory`, a directory). */
  readonly kind: string;
  /** Every key with a sidecar. */
  keys(): Promise<string[]>;
  /** The sidecar of `key`, or undefined. */
  meta(key: string): Promise<EntryMeta | undefined>;
  /** Replace the sidecar of `key`. */
  setMeta(key: string, meta: EntryMeta): Promise<void>;
  /** Bytes stored for `key` (the length of the prefix present; 0 when none). */
  length(key: string): Promise<number>;
  /** A writer that drops whatever is stored past `from` and appends from there. */
  writer(key: string, from: number): Promise<EntryWriter>;
  /** The stored bytes of `key` as a source named `name`, or undefined when none. */
  source(key: string, name: string): Promise<ByteSource | undefined>;
  /** Remove the bytes and the sidecar of `key`. */
  delete(key: string): Promise<void>;
}

/** A short, file-name-safe key for a URL (hex of its SHA-256, 32 digits). */
export function entryKey(url: string): string {
  const digest = sha256(new TextEncoder().encode(url));
  return [...digest.subarray(0, 16)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
