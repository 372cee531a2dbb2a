// Tells the customer their order shipped (a Node.js function beside the Python ones).
exports.handler = async (event, context) => {
  console.log(`notifying about ${event.orderId}`);
  return {
    sent: true,
    from: process.env.SENDER,
    stage: process.env.STAGE,
    by: context.functionName,
    withinTimeout: context.getRemainingTimeInMillis() > 0,
  };
};
