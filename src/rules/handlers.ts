import { ApiError } from '../http/errors.js';
import type { Handlers, ResponseOf } from '../http/types.js';
import { ifNoneMatchHas } from '../http/etag.js';
import type { Rulesets } from './rulesets.js';

export function rulesHandlers(rulesets: Rulesets): Handlers {
  return {
    async getRuleset(req, res) {
      const ruleset = await rulesets.get(req.params.key);
      if (!ruleset) throw new ApiError(404, `The operator has not published the rule set ${req.params.key}.`);
      res.setHeader('ETag', ruleset.etag);
      if (ifNoneMatchHas(req.headers['if-none-match'], ruleset.etag)) {
        res.status(304).end();
        return;
      }
      const body: ResponseOf<'getRuleset'> = { payload: ruleset.payload, signature: ruleset.signature };
      res.json(body);
    },
  };
}
