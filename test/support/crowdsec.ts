import { CategoryService } from '../../src/categories/service.js';
import { Bouncers } from '../../src/crowdsec/bouncers.js';
import { BouncerRepository } from '../../src/crowdsec/repository.js';
import type { TestServer } from './server.js';

/** The operator's bouncers of a test server, as `trs bouncers …` manages them. */
export const bouncersOf = (s: TestServer) => new Bouncers(new BouncerRepository(s.orm.em), new CategoryService(s.orm.em.fork(), s.clock), s.clock);
