'use strict';
// Preload (node --require loopback.cjs, or NODE_OPTIONS="--require ...") that
// makes every TCP listen in the process bind the loopback address, whatever
// host (or none) the program asked for. The npm MCP servers call
// `app.listen(PORT)`, which binds all interfaces and has no host flag.
//
// net.Server.prototype.listen is the one entry point: http(s).Server and
// express's app.listen inherit it. Unix sockets, pipes and inherited handles
// are left alone.
//
// MCPGOV_LISTEN_HOST overrides the address (default 127.0.0.1).
// MCPGOV_LISTEN_DEBUG=1 logs each rewritten listen on stderr.

const net = require('node:net');

const HOST = process.env.MCPGOV_LISTEN_HOST || '127.0.0.1';
const DEBUG = process.env.MCPGOV_LISTEN_DEBUG === '1';
const original = net.Server.prototype.listen;

if (!original.__mcpgovLoopback) {
  const isPort = (v) =>
    (typeof v === 'number' && Number.isFinite(v)) ||
    (typeof v === 'string' && v.trim() !== '' && /^\d+$/.test(v.trim()));

  // Turn any listen() argument list into (options[, callback]) with our host,
  // or return null for the forms that are not a TCP port (path, handle, fd).
  function rewrite(args) {
    const list = Array.prototype.slice.call(args);
    const cb = typeof list[list.length - 1] === 'function' ? list.pop() : undefined;
    const first = list[0];
    let options;
    if (first !== null && typeof first === 'object') {
      // listen(options) or listen(handle): pipes, handles and fds stay as they are.
      if (first.path !== undefined || first.fd !== undefined || first._handle !== undefined ||
          typeof first.listen === 'function') {
        return null;
      }
      options = Object.assign({}, first, { host: HOST });
      delete options.ipv6Only;
    } else if (first === undefined || first === null || isPort(first)) {
      // listen([port][, host][, backlog])
      options = { port: first === undefined || first === null ? 0 : Number(first), host: HOST };
      const rest = list.slice(1);
      if (typeof rest[0] === 'string' || rest[0] === undefined || rest[0] === null) rest.shift();
      if (typeof rest[0] === 'number') options.backlog = rest[0];
    } else {
      return null; // listen('/path/to/socket')
    }
    return cb ? [options, cb] : [options];
  }

  const patched = function listen() {
    const rewritten = rewrite(arguments);
    if (!rewritten) return original.apply(this, arguments);
    if (DEBUG) {
      process.stderr.write(`[loopback] listen ${JSON.stringify(rewritten[0])} (pid ${process.pid})\n`);
    }
    return original.apply(this, rewritten);
  };
  patched.__mcpgovLoopback = true;
  net.Server.prototype.listen = patched;
}
