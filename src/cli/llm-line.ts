/** rtr's capabilities as the lines `zino up` and `zino status` show about the LLM. */
import type { RtrCapabilities } from '../protocol/rtr.js';

/** One line: which endpoint, which model, and (when checked) whether it answers and what it serves. */
export function describeLlm(caps: RtrCapabilities): string {
  if (caps.configured === false) return `NOT CONFIGURED: ${caps.problem ?? 'see the rtr log'}`;
  if (caps.backend === 'demo') return 'the built-in demo model (set [api] base_url in your local configuration for a real one)';
  const model = caps.model ? `model ${caps.model}` : 'model (not set: the only one the endpoint serves)';
  const parts = [`${caps.base_url ?? '(endpoint unknown)'}, ${model}`];
  const { llm } = caps;
  if (llm) parts.push(probeText(caps));
  return parts.join('; ');
}

function probeText(caps: RtrCapabilities): string {
  const llm = caps.llm;
  if (!llm) return '';
  if (!llm.reachable) return `NOT REACHABLE: ${llm.error ?? 'no answer'}`;
  if (llm.error !== undefined) return `answers, but: ${llm.error}`;
  if (llm.models === undefined) return 'reachable (it does not list its models)';
  const served = llm.models.length === 0 ? 'serves no model' : `serves ${llm.models.slice(0, 8).join(', ')}${llm.models.length > 8 ? ', …' : ''}`;
  const missing = caps.model && !llm.models.includes(caps.model) ? ` (WARNING: not ${caps.model})` : '';
  return `reachable, ${served}${missing}`;
}

/** True when the LLM can be used as far as the capabilities tell: configured, and reachable when checked. */
export function llmUsable(caps: RtrCapabilities | undefined): boolean {
  if (!caps || caps.configured === false) return false;
  return caps.llm === undefined || (caps.llm.reachable && caps.llm.error === undefined);
}
