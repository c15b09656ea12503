import { sendData } from '../http/envelope.js';
import type { DataOf, Handlers } from '../http/types.js';
import type { CategoryService } from './service.js';

export function categoryHandlers(categories: CategoryService): Handlers {
  return {
    async listCategories(_req, res) {
      const data: DataOf<'listCategories'> = await categories.list();
      sendData(res, data);
    },
  };
}
