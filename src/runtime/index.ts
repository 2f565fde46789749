/**
 * The ZINO runtime: everything services and clients share. Services import only
 * this module (never another service's folder).
 */
export * from './errors.js';
export * from './frame/codec.js';
export * from './frame/decoder.js';
export * from './transport/writer.js';
export * from './transport/client.js';
export * from './transport/endpoint.js';
export * from './transport/connection.js';
export * from './transport/server.js';
export * from './transport/socket-path.js';
export * from './config/schema.js';
export * from './config/load.js';
export * from './log.js';
export * from './validate.js';
export * from './messages.js';
export * from './catalog.js';
export * from './service.js';
export * from './typed.js';
export * from './exit.js';
export * from './package-root.js';
export * from './dirs.js';
