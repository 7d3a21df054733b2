import { Query } from '@nestjs/cqrs';
import { Principal } from '../../../../../common/auth/principal';
import { InputReceipt } from '../../../domain/input-receipt';

/** An input's receipt as it is now (CONTRACT section 7), if the caller may see it; else 404 `input_not_found`. */
export class GetInputReceiptQuery extends Query<InputReceipt> {
  constructor(
    readonly principal: Principal,
    readonly inputId: string,
  ) {
    super();
  }
}
