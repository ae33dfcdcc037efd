// Bar charts drawn by uPlot (x = category index, labelled on the axis).

import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface BarSeries {
  label: string;
  values: Array<number | null>;
  color: string;
  /** Formats a value for the axis and legend. */
  format?: (value: number) => string;
}

function cssVar(name: string, fallback: string): string {
  const value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return value || fallback;
}

export function BarChart({ title, labels, series, height = 220, testid }: { title: string; labels: string[]; series: BarSeries[]; height?: number; testid?: string }) {
  const host = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = host.current;
    if (!element || labels.length === 0) return undefined;
    const ink = cssVar('--muted', '#666');
    const grid = cssVar('--line', '#ddd');
    const xs = labels.map((_, index) => index);
    const bars = uPlot.paths.bars!({ size: [0.7 / Math.max(series.length, 1), 60], align: 0 });
    const format = series[0]?.format ?? ((value: number) => String(value));
    const options: uPlot.Options = {
      width: Math.max(element.clientWidth, 320),
      height,
      title,
      legend: { show: true },
      cursor: { drag: { x: false, y: false } },
      // Bars start at zero (a range fitted to the data would exaggerate small differences).
      scales: { x: { time: false, range: [-0.5, labels.length - 0.5] }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
      axes: [
        { stroke: ink, grid: { show: false }, ticks: { stroke: grid }, values: (_u, ticks) => ticks.map((tick) => (Number.isInteger(tick) ? (labels[tick] ?? '') : '')), splits: () => xs },
        { stroke: ink, grid: { stroke: grid }, ticks: { stroke: grid }, values: (_u, ticks) => ticks.map((tick) => format(tick)), size: 70 },
      ],
      series: [
        { label: 'item', value: (_u, value) => (value === null || value === undefined ? '' : (labels[value] ?? '')) },
        ...series.map((entry, index) => ({
          label: entry.label,
          stroke: entry.color,
          fill: `${entry.color}cc`,
          paths: series.length > 1 ? uPlot.paths.bars!({ size: [0.7 / series.length, 60], align: (index === 0 ? -1 : 1) as 1 | -1 }) : bars,
          points: { show: false },
          value: (_u: uPlot, value: number | null) => (value === null ? '—' : (entry.format ?? format)(value)),
        })),
      ],
    };
    const chart = new uPlot(options, [xs, ...series.map((entry) => entry.values)] as uPlot.AlignedData, element);
    const resize = () => chart.setSize({ width: Math.max(element.clientWidth, 320), height });
    window.addEventListener('resize', resize);
    return () => {
      window.removeEventListener('resize', resize);
      chart.destroy();
    };
  }, [title, JSON.stringify(labels), JSON.stringify(series.map((entry) => [entry.label, entry.values, entry.color])), height]);
  if (labels.length === 0) return <p class="muted">{title}: no data.</p>;
  return <div class="chart" ref={host} data-testid={testid} />;
}
