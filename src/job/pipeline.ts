import type { ActorResult, AgentRef } from '../runtime/actors/actor.js';
import type { Runtime } from '../runtime/runtime.js';

/** What `runPipeline` takes. */
export interface PipelineOptions {
  runtime: Runtime;
  /** One researcher per topic, all in parallel. */
  topics: readonly string[];
  /** The goal, given to every agent as context. */
  goal?: string | undefined;
  /** Role names (defaults: researcher, analyst, reporter); `reporter: false` skips the report. */
  roles?: { researcher?: string; analyst?: string; reporter?: string | false } | undefined;
  /** Parent of every agent the pipeline starts. */
  parent?: string | undefined;
  /** Aborting it cancels every agent of the pipeline. */
  signal?: AbortSignal | undefined;
}

/** What a pipeline came to. */
export interface PipelineResult {
  /** `completed` when the analysis (and the report, if asked for) completed. */
  status: 'completed' | 'failed';
  research: ActorResult[];
  analysis: ActorResult;
  report?: ActorResult | undefined;
}

/**
 * A research job without a coordinator LLM: researchers on every topic in
 * parallel, an analyst that consumes their findings as they arrive (it starts
 * on the first finding, not after the last researcher), then a reporter
 * given the analysis. Resolves, never rejects: failures are in the results.
 *
 * @example
 * const { analysis, report } = await runPipeline({
 *   runtime,
 *   topics: ['solar.md', 'wind.md'],
 *   goal: 'Compare the growth of solar and wind power.',
 * });
 */
export async function runPipeline(options: PipelineOptions): Promise<PipelineResult> {
  const { runtime, topics, goal, parent, signal } = options;
  const names = {
    researcher: options.roles?.researcher ?? 'researcher',
    analyst: options.roles?.analyst ?? 'analyst',
    reporter: options.roles?.reporter === undefined ? 'reporter' : options.roles.reporter,
  };
  const context = goal === undefined ? '' : `\n\nThe overall goal: ${goal}`;
  const spawnOptions = {
    ...(parent === undefined ? {} : { parent }),
    ...(signal === undefined ? {} : { signal }),
  };

  // Researchers first: the analyst's channel is then open when it starts.
  const researchers: AgentRef[] = topics.map((topic) =>
    runtime.spawn(
      names.researcher,
      `Research this and publish one finding per useful source on the findings channel: ${topic}${context}`,
      spawnOptions,
    ),
  );
  const analyst = runtime.spawn(
    names.analyst,
    `Analyse the findings the researchers publish as they arrive; when the channel closes, give the full analysis.${context}`,
    spawnOptions,
  );
  const [research, analysis] = await Promise.all([
    Promise.all(researchers.map((ref) => ref.result)),
    analyst.result,
  ]);
  if (names.reporter === false || analysis.status !== 'completed') {
    return { status: analysis.status === 'completed' ? 'completed' : 'failed', research, analysis };
  }
  const report = await runtime.spawn(
    names.reporter,
    `Write the final report.${context}\n\nAnalysis:\n${analysis.final}`,
    spawnOptions,
  ).result;
  return {
    status: report.status === 'completed' ? 'completed' : 'failed',
    research,
    analysis,
    report,
  };
}
