/** The application shell: login gate, navigation between pages, and the node specs for the designer. */
import { useQuery } from '@tanstack/react-query';
import { lazy, Suspense, useEffect, useState } from 'react';
import { api, problemText, unwrap } from './api/client';
import { useAuth, type Role } from './auth';
import Designer from './designer/Designer';
import { indexSpecs } from './designer/spec';
import { SpecsContext } from './designer/specs-context';
import { Login } from './pages/Login';
import { Queues } from './pages/Queues';
import { Topology } from './pages/Topology';

const Monitoring = lazy(() => import('./pages/Monitoring'));

export type Route = { page: 'designer'; flowId: number | null } | { page: 'topology' | 'queues' | 'monitoring' };

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/');
  if (parts[0] === 'topology' || parts[0] === 'queues' || parts[0] === 'monitoring') return { page: parts[0] };
  const id = Number(parts[1]);
  return { page: 'designer', flowId: parts[0] === 'designer' && Number.isInteger(id) && id > 0 ? id : null };
}

function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(window.location.hash));
  useEffect(() => {
    const onHash = () => setRoute(parseRoute(window.location.hash));
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  return route;
}

const PAGES = [
  ['designer', 'Designer'],
  ['topology', 'Topology'],
  ['queues', 'Queues'],
  ['monitoring', 'Monitoring'],
] as const;

export function App() {
  const token = useAuth((s) => s.token);
  const username = useAuth((s) => s.username);
  const role = useAuth((s) => s.role);
  const logout = useAuth((s) => s.logout);
  const route = useRoute();
  const refresh = useAuth((s) => s.refresh);
  // The role may have changed since the login: the server's current permissions decide the pages.
  const me = useQuery({
    queryKey: ['me', token],
    enabled: !!token,
    staleTime: 60_000,
    queryFn: () => unwrap(api.GET('/api/auth/me')),
  });
  useEffect(() => {
    if (me.data) refresh(me.data.username, me.data.role as Role, me.data.permissions);
  }, [me.data, refresh]);
  const nodeTypes = useQuery({
    queryKey: ['node-types'],
    enabled: !!token,
    staleTime: Infinity,
    queryFn: () => unwrap(api.GET('/api/node-types')),
  });
  if (!token) return <Login />;
  return (
    <div className="app">
      <header className="topbar">
        <span className="brand">flowbroker</span>
        <nav aria-label="Pages">
          {PAGES.map(([page, label]) => (
            <a key={page} href={`#/${page}`} aria-current={route.page === page ? 'page' : undefined}>
              {label}
            </a>
          ))}
        </nav>
        <span className="who" data-testid="who">
          {username} ({role})
        </span>
        <button
          type="button"
          onClick={() => {
            void api.POST('/api/auth/logout').finally(logout);
          }}
        >
          Log out
        </button>
      </header>
      <main>
        {nodeTypes.error && <p className="error">Cannot load node types: {problemText(nodeTypes.error)}</p>}
        <SpecsContext.Provider value={nodeTypes.data ? indexSpecs(nodeTypes.data) : {}}>
          {route.page === 'designer' && <Designer key={route.flowId ?? 'new'} flowId={route.flowId} />}
        </SpecsContext.Provider>
        {route.page === 'topology' && <Topology />}
        {route.page === 'queues' && <Queues />}
        {route.page === 'monitoring' && (
          <Suspense fallback={<p className="muted">Loading monitoring…</p>}>
            <Monitoring />
          </Suspense>
        )}
      </main>
    </div>
  );
}
