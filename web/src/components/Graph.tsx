// The wave/agent dependency graph: agents grouped into one cluster per wave, an edge from each
// dependency to its dependant. Layout by @dagrejs/dagre (compound graph); drawn as SVG.

import { graphlib, layout } from '@dagrejs/dagre';
import { useMemo } from 'preact/hooks';

export interface GraphAgent {
  id: string;
  wave: number;
  dependencies: string[];
  status?: string;
}

const nodeWidth = 64;
const nodeHeight = 34;

interface Laid {
  width: number;
  height: number;
  clusters: Array<{ wave: number; x: number; y: number; width: number; height: number }>;
  nodes: Array<{ id: string; x: number; y: number; status: string }>;
  edges: Array<{ from: string; to: string; points: Array<{ x: number; y: number }> }>;
}

export function layoutGraph(agents: GraphAgent[]): Laid {
  const graph = new graphlib.Graph({ compound: true, multigraph: false });
  graph.setGraph({ rankdir: 'LR', nodesep: 14, ranksep: 46, marginx: 8, marginy: 24 });
  graph.setDefaultEdgeLabel(() => ({}));
  const known = new Set(agents.map((agent) => agent.id));
  for (const wave of new Set(agents.map((agent) => agent.wave))) graph.setNode(`wave-${wave}`, { label: `Wave ${wave}` });
  for (const agent of agents) {
    graph.setNode(agent.id, { width: nodeWidth, height: nodeHeight });
    graph.setParent(agent.id, `wave-${agent.wave}`);
  }
  for (const agent of agents) for (const dependency of agent.dependencies) if (known.has(dependency)) graph.setEdge(dependency, agent.id);
  layout(graph);
  const status = new Map(agents.map((agent) => [agent.id, agent.status ?? 'pending']));
  const label = graph.graph() as { width?: number; height?: number };
  return {
    width: Math.ceil(label.width ?? 0),
    height: Math.ceil(label.height ?? 0),
    clusters: graph
      .nodes()
      .filter((id: string) => id.startsWith('wave-'))
      .map((id: string) => {
        const node = graph.node(id) as { x: number; y: number; width: number; height: number };
        return { wave: Number(id.slice(5)), x: node.x - node.width / 2, y: node.y - node.height / 2, width: node.width, height: node.height };
      }),
    nodes: agents.map((agent) => {
      const node = graph.node(agent.id) as { x: number; y: number };
      return { id: agent.id, x: node.x, y: node.y, status: status.get(agent.id) ?? 'pending' };
    }),
    edges: graph.edges().map((edge: { v: string; w: string }) => ({ from: edge.v, to: edge.w, points: ((graph.edge(edge) as { points?: Array<{ x: number; y: number }> }).points ?? []) })),
  };
}

export function DependencyGraph({ agents, hrefFor }: { agents: GraphAgent[]; hrefFor?: (id: string) => string }) {
  const key = JSON.stringify(agents.map((agent) => [agent.id, agent.wave, agent.dependencies]));
  // Layout depends on the structure only; statuses recolour the laid-out nodes.
  const laid = useMemo(() => layoutGraph(agents), [key]);
  const status = new Map(agents.map((agent) => [agent.id, agent.status ?? 'pending']));
  if (agents.length === 0) return <p class="muted">No agents.</p>;
  return (
    <div class="graph-wrap">
      <svg class="graph" width={laid.width} height={laid.height} viewBox={`0 0 ${laid.width} ${laid.height}`} role="img" aria-label="wave and agent dependency graph">
        <defs>
          <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
            <path d="M0,0 L10,5 L0,10 z" class="arrow" />
          </marker>
        </defs>
        {laid.clusters.map((cluster) => (
          <g key={`w${cluster.wave}`} class="cluster">
            <rect x={cluster.x} y={cluster.y} width={cluster.width} height={cluster.height} rx="8" />
            <text x={cluster.x + 8} y={cluster.y - 6}>
              Wave {cluster.wave}
            </text>
          </g>
        ))}
        {laid.edges.map((edge) => (
          <polyline key={`${edge.from}-${edge.to}`} class="edge" points={edge.points.map((point) => `${point.x},${point.y}`).join(' ')} marker-end="url(#arrow)" />
        ))}
        {laid.nodes.map((node) => {
          const body = (
            <g class={`node status-${status.get(node.id) ?? node.status}`} data-graph-agent={node.id}>
              <rect x={node.x - nodeWidth / 2} y={node.y - nodeHeight / 2} width={nodeWidth} height={nodeHeight} rx="6" />
              <text x={node.x} y={node.y + 5} text-anchor="middle">
                {node.id}
              </text>
            </g>
          );
          return hrefFor ? (
            <a key={node.id} href={hrefFor(node.id)}>
              {body}
            </a>
          ) : (
            <g key={node.id}>{body}</g>
          );
        })}
      </svg>
    </div>
  );
}
