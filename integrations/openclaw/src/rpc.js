// @ts-check
// memindex's socket protocol: JSON-RPC 2.0, one JSON object per line, over a Unix
// stream socket. One connection per call: a call that times out is torn down with
// its connection, so a stuck daemon can never wedge a later call.
//
// Nothing is sent to a socket another user owns: a query holds what the agent is
// looking for ("deploy password"), and a fake daemon could answer with planted text.
// Node cannot read the peer's uid (SO_PEERCRED) as memindex's Python client does,
// so the socket file's owner is checked, and its folder: one that others may write
// without the sticky bit would let them swap the socket after the check.
import fs from "node:fs";
import net from "node:net";
import path from "node:path";

/** An error a caller can show as it is: `code` is memindex's stable code or ours. */
export class MemindexError extends Error {
  /**
   * @param {string} message
   * @param {string} [code]
   */
  constructor(message, code = "error") {
    super(message);
    this.name = "MemindexError";
    this.code = code;
  }
}

const MAX_ANSWER = 64 * 1024 * 1024;
let nextId = 1;

/**
 * Why `socketPath` must not be talked to, or null: it is not a socket, another user
 * owns it, or it sits in a folder others can swap it in. A socket that is not there
 * is null (nothing listens: the caller may start the daemon).
 * @param {string} socketPath
 * @param {number | undefined} [uid]
 * @returns {string | null}
 */
export function socketProblem(socketPath, uid = process.getuid?.()) {
  if (uid === undefined) return null; // no uids on this platform
  let st;
  try {
    st = fs.lstatSync(socketPath);
  } catch {
    return null;
  }
  if (!st.isSocket()) return `${socketPath} is not a socket`;
  if (st.uid !== uid)
    return `${socketPath} belongs to uid ${st.uid}, not to this gateway's user (${uid})`;
  const dir = path.dirname(socketPath);
  let d;
  try {
    d = fs.statSync(dir);
  } catch {
    return null;
  }
  const othersWrite = (d.mode & 0o002) !== 0 || (d.uid !== uid && (d.mode & 0o020) !== 0);
  if (othersWrite && (d.mode & 0o1000) === 0)
    return `${dir} can be written by other users (no sticky bit): its socket could be swapped`;
  return null;
}

/**
 * Call `method` on the daemon at `socketPath`.
 * Rejects with MemindexError: code "daemon_unavailable" when nothing listens,
 * "timeout" past `timeoutMs`, else the daemon's own error code. Resolves to the
 * daemon's JSON answer (its shapes are memindex's protocol: indexer/api).
 * @param {string} socketPath
 * @param {string} method
 * @param {Record<string, unknown>} [params]
 * @param {{ timeoutMs?: number, signal?: AbortSignal }} [opts]
 * @returns {Promise<any>}
 */
export function call(socketPath, method, params = {}, { timeoutMs = 10_000, signal } = {}) {
  const problem = socketProblem(socketPath);
  if (problem) {
    return Promise.reject(
      new MemindexError(
        `refusing memindex socket: ${problem}; nothing was sent. Point ` +
          "plugins.entries.memindex.config.socket at your own daemon's socket",
        "foreign_socket",
      ),
    );
  }
  return new Promise((resolve, reject) => {
    const id = nextId++;
    let buf = "";
    let done = false;
    const conn = net.createConnection({ path: socketPath });
    /**
     * @param {MemindexError | null} err
     * @param {unknown} [value]
     */
    const finish = (err, value) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener?.("abort", onAbort);
      conn.destroy();
      if (err) reject(err);
      else resolve(value);
    };
    const onAbort = () => finish(new MemindexError(`memindex ${method} was cancelled`, "cancelled"));
    const timer = setTimeout(
      () =>
        finish(
          new MemindexError(
            `memindex did not answer ${method} within ${(timeoutMs / 1000).toFixed(1)} s ` +
              `(socket ${socketPath}); see \`memindex status\``,
            "timeout",
          ),
        ),
      timeoutMs,
    );
    if (signal?.aborted) return onAbort();
    signal?.addEventListener?.("abort", onAbort, { once: true });
    conn.setEncoding("utf8");
    conn.on("connect", () => {
      conn.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    });
    conn.on("data", (chunk) => {
      buf += chunk;
      if (buf.length > MAX_ANSWER) {
        return finish(new MemindexError(`memindex answered ${method} with over 64 MiB`, "protocol"));
      }
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (!line.trim()) continue;
        let msg;
        try {
          msg = JSON.parse(line);
        } catch {
          return finish(new MemindexError(`memindex sent a line that is not JSON`, "protocol"));
        }
        if (msg.id !== id) continue;
        if (msg.error) {
          const code = msg.error.data?.code ?? "error";
          return finish(new MemindexError(String(msg.error.message ?? "memindex error"), code));
        }
        return finish(null, msg.result);
      }
    });
    conn.on("error", (/** @type {NodeJS.ErrnoException} */ err) => {
      const down = err.code === "ENOENT" || err.code === "ECONNREFUSED" || err.code === "ENOTSOCK";
      finish(
        down
          ? new MemindexError(`no memindex daemon answers at ${socketPath}`, "daemon_unavailable")
          : new MemindexError(`memindex socket ${socketPath}: ${err.message}`, "socket"),
      );
    });
    conn.on("close", () =>
      finish(new MemindexError(`memindex closed the connection during ${method}`, "socket")),
    );
  });
}
