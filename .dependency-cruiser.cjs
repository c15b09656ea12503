/**
 * The import rules of src/ (ARCHITECTURE.md, "Imports"), checked by `npm run lint:imports`
 * (a step of `npm test`): `npx depcruise src --config .dependency-cruiser.cjs`.
 *
 * The layers, top to bottom:
 *   the composition root   src/main.ts, src/start.ts, src/app.ts, src/modules.ts (the areas' modules,
 *                          built once by start.ts and by the CLI)
 *   the edges              src/http/, src/web/, src/cli/ (and each area's handlers.ts)
 *   the areas              src/<area>/: handlers -> service -> repository
 *   the bottom             src/config.ts, and the settings slices it merges (src/<area>/settings.ts);
 *                          src/db/; the shared modules (errors, address, clock, text, logging,
 *                          progress, openapi, ipc, roles, settings)
 *
 * Imports that broke a rule when it was written, and that another change will remove, are
 * listed in .dependency-cruiser-known-violations.json (`--ignore-known`): a new one fails.
 */
const AREAS = '(abuseipdb|account|audit|blacklist|categories|crowdsec|delisting|geo|jobs|keys|notifications|payments|relay|reputation|rules|stats|webhooks)';
const SHARED = '^src/(errors|address|clock|text|logging|progress|openapi|ipc|roles|settings)\\.ts$';
/** An area's settings slice: its variables and what they mean, merged by src/config.ts. */
const SLICE = `^src/${AREAS}/settings\\.ts$`;

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'No import circle, of files or through folders.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'areas-not-to-http',
      severity: 'error',
      comment:
        'An area does not import the HTTP edge (src/http/): only its handlers do, its module (which hands them ' +
        "the edge's pieces) and the composition root. Services and repositories know nothing of requests, statuses or headers.",
      from: { path: `^src/${AREAS}/`, pathNot: '/(handlers|module)\\.ts$' },
      to: { path: '^src/http/' },
    },
    {
      name: 'areas-not-to-other-edges',
      severity: 'error',
      comment: 'An area does not import the pages (src/web/), the CLI (src/cli/) or the composition root.',
      from: { path: `^src/${AREAS}/` },
      to: { path: '^src/(web|cli)/|^src/(main|start|app|modules)\\.ts$' },
    },
    {
      name: 'no-other-areas-handlers',
      severity: 'error',
      comment: "No area imports another area's handlers: what two areas share lives in a service or a shared module.",
      from: { path: '^src/([^/]+)/' },
      to: { path: '^src/[^/]+/handlers\\.ts$', pathNot: '^src/$1/' },
    },
    {
      name: 'bottom-imports-no-area',
      severity: 'error',
      comment:
        'The configuration, the data layer (src/db/) and the shared modules (the role table src/roles.ts among them, ' +
        'which imports nothing) never import an area, an edge or the composition root: they are what everything ' +
        'else stands on.',
      from: { path: `^src/config\\.ts$|^src/db/|${SHARED}|${SLICE}` },
      to: { path: `^src/${AREAS}/|^src/(http|web|cli)/|^src/(main|start|app|modules)\\.ts$`, pathNot: SLICE },
    },
    {
      name: 'slices-stand-alone',
      severity: 'error',
      comment:
        "An area's settings slice (src/<area>/settings.ts) is part of the bottom layer: src/config.ts merges it, " +
        'so it imports only the shared modules, never its own area, another slice or the configuration.',
      from: { path: SLICE },
      to: { path: '^src/', pathNot: SHARED },
    },
    {
      name: 'db-and-shared-not-to-config',
      severity: 'error',
      comment: 'The data layer and the shared modules are handed their settings; they do not read the configuration.',
      from: { path: `^src/db/|${SHARED}` },
      to: { path: '^src/config\\.ts$' },
    },
    {
      name: 'repositories-import-no-service',
      severity: 'error',
      comment: 'A repository imports no service: the rules call the data layer, not the other way round.',
      from: { path: '(^|/)repository\\.ts$|\\.repository\\.ts$' },
      // types of the rules (a caller, a role) are words both sides use
      to: { path: '(^|/)service\\.ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'database-drivers-in-data-access',
      severity: 'error',
      comment:
        'SQL lives in *.repository.ts files and src/db/ only: they alone import the database drivers and the ORM ' +
        '(pg, pg-query-stream, @mikro-orm/*). A service may name the ORM\'s types to hand them on.',
      from: { path: '^src/', pathNot: '^src/db/|(^|/)repository\\.ts$|\\.repository\\.ts$' },
      to: { path: '^node_modules/(pg|pg-query-stream|@mikro-orm/[^/]+)/', dependencyTypesNot: ['type-only'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/db/migrations/' },
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
