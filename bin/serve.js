// `npm run serve`: the compiled server (dist/src/main.js), or a clear word when it is not built.
// Supervisors (systemd, containers) may run `node dist/src/main.js` directly.
import { runBuilt } from './built.js';

await runBuilt('dist/src/main.js', 'npm run serve');
