/** Debian's python3, where python3-zmq, -msgpack, -xxhash and -aiohttp install (`.ci/run`). */
export const PYTHON = "/usr/bin/python3";
