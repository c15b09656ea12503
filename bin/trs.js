#!/usr/bin/env node
// The package's `trs` command: the compiled CLI (dist/src/cli/index.js), or a clear word when it is not built.
import { runBuilt } from './built.js';

await runBuilt('dist/src/cli/index.js', 'trs');
