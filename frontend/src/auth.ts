/**
 * Who is logged in and what their role permits, kept in session storage so a reload keeps the
 * session. The permissions come from the server (the login answer and GET /api/auth/me), the
 * same table its routes check, so the pages never offer an action the server would refuse.
 */
import { create } from 'zustand';

export type Role = 'viewer' | 'developer' | 'operator' | 'admin';
/** A permission name of the server's table (read, flows.edit, deploy, topology.manage, queues.write, users.manage). */
export type Permission = string;
const KEY = 'flowbroker.session';

export interface AuthState {
  token: string | null;
  username: string | null;
  role: Role | null;
  permissions: Permission[];
}
export interface AuthActions {
  login: (token: string, username: string, role: Role, permissions: Permission[]) => void;
  /** The server's current word on the account (its role may have changed since the login). */
  refresh: (username: string, role: Role, permissions: Permission[]) => void;
  logout: () => void;
}

const SIGNED_OUT: AuthState = { token: null, username: null, role: null, permissions: [] };

function restore(): AuthState {
  try {
    const saved = JSON.parse(globalThis.sessionStorage?.getItem(KEY) ?? 'null') as Partial<AuthState> | null;
    if (saved && saved.token) return { ...SIGNED_OUT, ...saved, permissions: saved.permissions ?? [] };
  } catch {
    // A corrupt saved session is the same as none.
  }
  return SIGNED_OUT;
}

function save(state: AuthState): AuthState {
  globalThis.sessionStorage?.setItem(KEY, JSON.stringify(state));
  return state;
}

export const useAuth = create<AuthState & AuthActions>()((set, get) => ({
  ...restore(),
  login: (token, username, role, permissions) => set(save({ token, username, role, permissions })),
  refresh: (username, role, permissions) => set(save({ token: get().token, username, role, permissions })),
  logout: () => {
    globalThis.sessionStorage?.removeItem(KEY);
    set(SIGNED_OUT);
  },
}));

/** Whether the logged-in user may do what `permission` names. */
export function can(permissions: readonly Permission[], permission: Permission): boolean {
  return permissions.includes(permission);
}

/** The hook form: `useCan('deploy')`. */
export function useCan(permission: Permission): boolean {
  return useAuth((s) => can(s.permissions, permission));
}
