/// <reference types="vitest/config" />
import react from '@vitejs/plugin-react';
import { defineConfig } from 'vite';

// The configuration manager serves the built assets; in development the API is proxied to it.
export default defineConfig({
  plugins: [react()],
  server: { proxy: { '/api': process.env.FLOWBROKER_API ?? 'http://127.0.0.1:8080' } },
  build: { target: 'es2022', chunkSizeWarningLimit: 2000 },
  test: { environment: 'jsdom', include: ['src/**/*.test.{ts,tsx}'] },
});
