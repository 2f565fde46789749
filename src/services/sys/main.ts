/**
 * zino-sys: serves the system prompt rendered from `[sys] template` with the
 * tools, skills, personality, iteration limit and soft memory. Messages: `get`,
 * `reload` (also on SIGHUP), `set_soft_memory`. A missing template serves an
 * empty prompt with a warning.
 */
import { readFile } from 'node:fs/promises';
import { loadCatalog, requireString, type Catalog, type Logger, type ResolvedConfig, type ServiceDefinition } from '../../runtime/index.js';
import { renderPrompt } from './render.js';

/** The prompt and what it was rendered from. */
class SystemPrompt {
  private catalog: Catalog = { tools: [], skills: [], problems: [] };
  private template = '';
  private softMemory: string;
  private rendered = '';

  constructor(
    private readonly config: Readonly<ResolvedConfig>,
    private readonly log: Logger,
  ) {
    this.softMemory = config.sys.soft_memory;
  }

  get content(): string {
    return this.rendered;
  }

  /** Re-reads the template, tools and skills, then renders. */
  async reload(): Promise<string> {
    const [catalog, template] = await Promise.all([
      loadCatalog({ tools: this.config.tools.dir, skills: this.config.skills.dir }, this.log),
      this.readTemplate(),
    ]);
    this.catalog = catalog;
    this.template = template;
    this.render();
    this.log.info({ tools: catalog.tools.length, skills: catalog.skills.length, chars: this.rendered.length }, 'system prompt rendered');
    return this.rendered;
  }

  setSoftMemory(content: string): string {
    this.softMemory = content;
    this.render();
    return this.rendered;
  }

  private render(): void {
    this.rendered = renderPrompt({
      template: this.template,
      personality: this.config.sys.personality,
      tools: this.catalog.tools,
      skills: this.catalog.skills,
      maxIterations: this.config.agent.max_iterations,
      softMemory: this.softMemory,
    });
  }

  private async readTemplate(): Promise<string> {
    try {
      return await readFile(this.config.sys.template, 'utf8');
    } catch (err) {
      this.log.warn({ template: this.config.sys.template, reason: (err as NodeJS.ErrnoException).code ?? (err as Error).message }, 'system prompt template unreadable; serving an empty prompt');
      return '';
    }
  }
}

const sys: ServiceDefinition = {
  name: 'sys',
  async create(config, log) {
    const prompt = new SystemPrompt(config, log);
    await prompt.reload();
    const reply = (content: string) => ({ type: 'system_prompt', content });
    return {
      handlers: {
        get: () => reply(prompt.content),
        reload: async () => reply(await prompt.reload()),
        set_soft_memory: (request) => reply(prompt.setSoftMemory(requireString(request, 'content'))),
      },
      reload: async () => {
        await prompt.reload();
      },
    };
  },
};

export default sys;
