// The stack's charge function: the amount charged, or CardDeclined for the card 0000.
class CardDeclined extends Error {
  constructor(message) {
    super(message);
    this.name = 'CardDeclined';
  }
}

exports.handler = async (event) => {
  if (event.card === '0000') throw new CardDeclined(`card ${event.card} declined`);
  return { charged: event.amount };
};
