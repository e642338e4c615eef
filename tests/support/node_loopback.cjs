// Preloaded with `node --require` so a Node server that listens on every interface
// (app.listen(PORT)) binds 127.0.0.1 only: the tests and proofs stay on loopback.
"use strict";
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || (typeof args[0] === "string" && /^\d+$/.test(args[0]))) {
    const callback = args.find((a) => typeof a === "function");
    return listen.call(this, { port: Number(args[0]), host: "127.0.0.1" }, callback);
  }
  if (args[0] && typeof args[0] === "object" && !("path" in args[0])) {
    args[0] = { ...args[0], host: "127.0.0.1" };
  }
  return listen.apply(this, args);
};
