/** Which HTTP engine a store started by this test process should run on. */
import { loadUws } from '../../src/http/uws/uws-loader.js';
import { testEngine } from './store-server.js';

/** HTTP_ENGINE's engine, or unset the native build that loads here, else node. */
export function expectedEngine(): { engine: 'uws' | 'node'; uwsBuild: string | null } {
  if (testEngine === 'node') return { engine: 'node', uwsBuild: null };
  const { loaded } = loadUws();
  return loaded ? { engine: 'uws', uwsBuild: loaded.label } : { engine: 'node', uwsBuild: null };
}
