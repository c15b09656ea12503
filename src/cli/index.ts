#!/usr/bin/env node
import { runTrs } from './program.js';

/**
 * The operator's command line as a process (`npx trs`, `npm run --silent cli -- <command>`): one
 * run of src/cli/program.ts on this process's environment and streams, its exit code the
 * process's.
 */
process.exitCode = await runTrs(process.argv.slice(2), { env: process.env, stdout: process.stdout, stderr: process.stderr, exitCode: 0 });
