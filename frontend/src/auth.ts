/** Who is logged in, kept in session storage so a reload keeps the session. */
import { create } from 'zustand';

export type Role = 'viewer' | 'developer' | 'operator' | 'admin';
const RANK: Record<Role, number> = { viewer: 0, developer: 1, operator: 2, admin: 3 };
const KEY = 'flowbroker.session';

export interface AuthState {
  token: string | null;
  username: string | null;
  role: Role | null;
}
export interface AuthActions {
  login: (token: string, username: string, role: Role) => void;
  logout: () => void;
}

function restore(): AuthState {
  try {
    const saved = JSON.parse(globalThis.sessionStorage?.getItem(KEY) ?? 'null') as AuthState | null;
    if (saved && saved.token) return saved;
  } catch {
    // A corrupt saved session is the same as none.
  }
  return { token: null, username: null, role: null };
}

export const useAuth = create<AuthState & AuthActions>()((set) => ({
  ...restore(),
  login: (token, username, role) => {
    globalThis.sessionStorage?.setItem(KEY, JSON.stringify({ token, username, role }));
    set({ token, username, role });
  },
  logout: () => {
    globalThis.sessionStorage?.removeItem(KEY);
    set({ token: null, username: null, role: null });
  },
}));

/** Whether `role` is `needed` or above (viewer < developer < operator < admin). */
export function atLeast(role: Role | null, needed: Role): boolean {
  return role !== null && RANK[role] >= RANK[needed];
}
