// memindex's socket protocol: JSON-RPC 2.0, one JSON object per line, over a Unix
// stream socket. One connection per call: a call that times out is torn down with
// its connection, so a stuck daemon can never wedge a later call.
import net from "node:net";

/** An error a caller can show as it is: `code` is memindex's stable code or ours. */
export class MemindexError extends Error {
  constructor(message, code = "error") {
    super(message);
    this.name = "MemindexError";
    this.code = code;
  }
}

const MAX_ANSWER = 64 * 1024 * 1024;
let nextId = 1;

/**
 * Call `method` on the daemon at `socketPath`.
 * Rejects with MemindexError: code "daemon_unavailable" when nothing listens,
 * "timeout" past `timeoutMs`, else the daemon's own error code.
 */
export function call(socketPath, method, params = {}, { timeoutMs = 10_000, signal } = {}) {
  return new Promise((resolve, reject) => {
    const id = nextId++;
    let buf = "";
    let done = false;
    const conn = net.createConnection({ path: socketPath });
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
    conn.on("error", (err) => {
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
