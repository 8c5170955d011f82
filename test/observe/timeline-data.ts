import type { TimelineData } from '../../src/observe/timeline-model.js';

/** The JSON data island of a rendered timeline. */
export function timelineData(html: string): TimelineData {
  const match = /<script id="troupe-data" type="application\/json">([\s\S]*?)<\/script>/.exec(html);
  if (match?.[1] === undefined) throw new Error('no data island in the timeline');
  return JSON.parse(match[1]) as TimelineData;
}
