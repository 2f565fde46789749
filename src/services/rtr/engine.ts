/**
 * Everything of rtr that needs the openai SDK, in one module that rtr imports once it
 * listens (main.ts): the SDK is about 160 of the modules rtr would otherwise load before it
 * could answer anything (issue 18; it is a chunk of its own in the bundled CLI). The demo model
 * and the endpoint checks go through here too, so that one import serves every path.
 */
export { toZinoError } from './api-errors.js';
export { inferCollected, inferStreamed } from './infer.js';
export { OpenAiBackend } from './openai-backend.js';
export { warmUp } from './warm-up.js';
