'use strict';
// express-openapi-validator requires the deprecated lodash.get; package.json's `overrides`
// points that name here. es-toolkit's compat `get` keeps lodash's path semantics and is
// maintained. test/unit/lodash-get-shim.test.ts compares the two on the paths the validator uses.
module.exports = require('es-toolkit/compat').get;
